"""What the tokenizer's unit tests talk to: the real EngineClient on real ZMQ sockets, and at the other end
a small scheduler written for the test that answers each Generate from a script.

A script maps a Generate to what the scheduler sends back: a list of token ids (one TokenBatch per id, the
last one finishing with ``finish_reason``, or none: the request keeps running), an Overloaded, or an error
string (a rejected request)."""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field

import zmq
import zmq.asyncio

from roles.endpoints import Endpoints
from roles.protocol import (
    Abort,
    Generate,
    LoadReport,
    Overloaded,
    TokenBatch,
    TokenEvent,
    encode,
    request_decoder,
)
from roles.tokenizer.engine_client import EngineClient
from roles.tokenizer.front_state import FrontSettings, FrontState
from roles.tokenizer.metrics import ServingMetrics


@dataclass
class Tokens:
    ids: list[int]
    finish_reason: str | None = "length"  # None: the request is still running after these tokens
    num_cached_tokens: int = 0  # what the prefix cache held of the prompt, sent with the first token
    queue_time_s: float = 0.25  # how long the request waited in the scheduler, sent with the first token


Reply = Tokens | Overloaded | str


@dataclass
class ScriptedScheduler:
    endpoints: Endpoints
    context: zmq.asyncio.Context
    script: Callable[[Generate], Reply]
    generates: list[Generate] = field(default_factory=list)
    aborts: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.requests = self.context.socket(zmq.PULL)
        self.requests.bind(self.endpoints.scheduler_requests(0))
        self.results = self.context.socket(zmq.PUSH)
        self.results.connect(self.endpoints.tokenizer_results(0))

    async def serve_forever(self) -> None:
        while True:
            message = request_decoder.decode(await self.requests.recv())
            if isinstance(message, Abort):
                self.aborts.append(message.request_id)
                continue
            self.generates.append(message)
            reply = self.script(message)
            if isinstance(reply, Overloaded):
                await self.results.send(encode(Overloaded(message.request_id, reply.retry_after_s)))
            elif isinstance(reply, str):
                event = TokenEvent(message.request_id, -1, None, None, "error", reply)
                await self.results.send(encode(TokenBatch([event])))
            else:
                for position, token_id in enumerate(reply.ids):
                    is_last = position == len(reply.ids) - 1
                    event = TokenEvent(
                        message.request_id,
                        token_id,
                        None,
                        None,
                        reply.finish_reason if is_last else None,
                        num_cached_tokens=reply.num_cached_tokens if position == 0 else None,
                        queue_time_s=reply.queue_time_s if position == 0 else None,
                    )
                    await self.results.send(encode(TokenBatch([event])))
            report = LoadReport(0, len(self.generates), 0, 1, 10, finished=[message.request_id])
            await self.results.send(encode(report))

    def close(self) -> None:
        self.requests.close(0)
        self.results.close(0)


def front_settings(**overrides) -> FrontSettings:
    settings = dict(
        served_name="smollm2",
        context_length=64,
        default_max_tokens=16,
        api_key=None,
        metrics_enabled=True,
        log_requests=False,
        request_timeout_s=60.0,
        max_request_bytes=2**20,
        exports_expert_balancedness=False,
        encode_threads=2,
    )
    return FrontSettings(**{**settings, **overrides})


class FrontWithPeer:
    """A FrontState (bundled tokenizer, real EngineClient) wired to a ScriptedScheduler, inside one loop."""

    def __init__(self, tokenizer, script: Callable[[Generate], Reply], **settings):
        self.runtime_dir = tempfile.mkdtemp(prefix="rs-")  # short: ipc paths are limited to ~100 characters
        self.endpoints = Endpoints(self.runtime_dir, num_tokenizers=1, dp_size=1)
        self.context = zmq.asyncio.Context()
        client = EngineClient(self.endpoints, 0, self.context)
        os.mkdir(self.endpoints.metrics_dir)
        metrics = ServingMetrics(0, self.endpoints.metrics_dir)
        self.state = FrontState(front_settings(**settings), tokenizer, client, metrics)
        self.peer = ScriptedScheduler(self.endpoints, self.context, script)

    async def __aenter__(self) -> FrontWithPeer:
        self.tasks = [
            asyncio.ensure_future(self.state.client.receive_forever()),
            asyncio.ensure_future(self.peer.serve_forever()),
        ]
        return self

    async def __aexit__(self, *exc) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        self.peer.close()
        self.state.client.requests.close(0)
        self.state.client.results.close(0)
        self.context.term()

    async def wait_for_aborts(self, count: int, timeout_s: float = 60) -> list[str]:
        async def until() -> None:
            while len(self.peer.aborts) < count:
                await asyncio.sleep(0.005)

        await asyncio.wait_for(until(), timeout_s)
        return self.peer.aborts
