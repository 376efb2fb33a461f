"""The tokenizer's link to the schedulers: send Generate/Abort, route token events (and a refusal,
Overloaded) to per-request queues, keep each scheduler's latest LoadReport."""

from __future__ import annotations

import asyncio
import itertools
import logging

import zmq
import zmq.asyncio

from roles.endpoints import Endpoints
from roles.protocol import (
    Abort,
    ExpertCommand,
    ExpertCommandReply,
    FrameCounter,
    Generate,
    LoadReport,
    Overloaded,
    SamplingFields,
    TokenBatch,
    TokenEvent,
    encode,
    result_decoder,
)
from roles.sockets import bind, connect

log = logging.getLogger("roleserve.tokenizer")


class EngineClient:
    def __init__(self, endpoints: Endpoints, instance: int, context: zmq.asyncio.Context):
        self.instance = instance
        self.num_schedulers = endpoints.dp_size  # every replica answers an ExpertCommand
        self.requests = context.socket(zmq.PUSH)
        self.requests.setsockopt(zmq.LINGER, 0)
        connect(self.requests, endpoints.request_entry, endpoints.curve)
        self.results = bind(context.socket(zmq.PULL), endpoints.tokenizer_results(instance), endpoints.curve)
        self.queues: dict[str, asyncio.Queue[TokenEvent | Overloaded]] = {}
        self.frames = FrameCounter()
        self.scheduler_load: dict[int, LoadReport] = {}  # scheduler instance -> its latest report
        self._ids = itertools.count()
        self.recording_replies: dict[str, asyncio.Queue[ExpertCommandReply]] = {}

    def new_request_id(self) -> str:
        return f"t{self.instance}-{next(self._ids)}"

    @property
    def num_in_flight(self) -> int:
        return len(self.queues)

    async def submit(
        self, request_id: str, prompt_ids: list[int], sampling: SamplingFields, grammar: str | None = None
    ) -> asyncio.Queue:
        frame = encode(Generate(request_id, self.instance, prompt_ids, sampling, grammar))  # before it counts
        queue: asyncio.Queue[TokenEvent | Overloaded] = asyncio.Queue()
        self.queues[request_id] = queue
        try:
            await self.requests.send(frame)
        except BaseException:  # never sent (cancelled, socket closed): it is not in flight
            self.queues.pop(request_id, None)
            raise
        return queue

    async def abort(self, request_id: str) -> None:
        if self.queues.pop(request_id, None) is not None:
            await self.requests.send(encode(Abort(request_id)))

    def fail_all(self, reason: str) -> None:
        """End every request in flight with a "failed" event saying ``reason`` (its scheduler died or hung):
        each waiting handler answers its client with a 503 naming the role, a stream with a final error event."""
        queues, self.queues = self.queues, {}
        for request_id, queue in queues.items():
            queue.put_nowait(TokenEvent(request_id, -1, None, None, "failed", reason))

    def release(self, request_id: str) -> None:
        """Forget a request that finished normally."""
        self.queues.pop(request_id, None)

    async def receive_forever(self) -> None:
        while True:
            message = self.frames.decode(result_decoder, await self.results.recv())
            if isinstance(message, TokenBatch):
                for event in message.events:
                    self._deliver(event.request_id, event, event.finish_reason is not None)
            elif isinstance(message, Overloaded):
                self._deliver(message.request_id, message, True)
            elif isinstance(message, LoadReport):
                self.scheduler_load[message.instance] = message
            elif isinstance(message, ExpertCommandReply):
                waiting = self.recording_replies.get(message.query_id)
                if waiting is not None:
                    waiting.put_nowait(message)

    async def expert_command(
        self, action: str, num_replicas: int, timeout_s: float
    ) -> list[ExpertCommandReply]:
        """Send start/stop/dump/rebalance to every scheduler replica and gather their answers (TimeoutError
        if late)."""
        query_id = f"x{self.instance}-{next(self._ids)}"
        gathered: asyncio.Queue[ExpertCommandReply] = asyncio.Queue()
        self.recording_replies[query_id] = gathered
        try:
            await self.requests.send(encode(ExpertCommand(action, query_id, self.instance)))
            async with asyncio.timeout(timeout_s):
                replies = [await gathered.get() for _ in range(num_replicas)]
        finally:
            del self.recording_replies[query_id]
        return sorted(replies, key=lambda reply: reply.instance)

    def _deliver(self, request_id: str, message: TokenEvent | Overloaded, is_last: bool) -> None:
        queue = self.queues.get(request_id)
        if queue is not None:
            queue.put_nowait(message)
            if is_last:
                del self.queues[request_id]
