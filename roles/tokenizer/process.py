"""The tokenizer role's process: load the tokenizer, serve HTTP with uvicorn on uvloop, talk to the
schedulers over ZMQ and to the launcher over the control channel."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import socket
import time

import uvicorn
import uvloop
import zmq
import zmq.asyncio

from roles.child_process import ChildLink
from roles.heartbeat import HEARTBEAT_EVERY_S
from roles.protocol import (
    Heartbeat,
    InspectQuery,
    InspectReply,
    RoleFailed,
    RoleHealth,
    Shutdown,
    control_decoder,
    encode,
)
from roles.tokenizer.app import create_app
from roles.tokenizer.embed_client import EmbedClient
from roles.tokenizer.engine_client import EngineClient
from roles.tokenizer.front_state import STARTING, FrontSettings, FrontState
from roles.tokenizer.metrics import ServingMetrics
from roles.tokenizer.openai_errors import OpenAIError
from roles.tokenizer.text_tokenizer import load_text_tokenizer
from roles.tokenizer.tokenizer_facts import tokenizer_facts
from runtime_context import get_context, get_http, get_model, get_tokenizer
from runtime_context.collectors import resolve_collector_class
from runtime_context.inspect_report import live_entry

log = logging.getLogger("roleserve.tokenizer")
WORKER_METRICS_EVERY_S = 0.1  # how stale a scrape may see another worker's in-flight counts


def bind_listener(host: str, port: int) -> socket.socket:
    """SO_REUSEPORT lets every tokenizer worker accept on the same port; the kernel spreads connections."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    listener.bind((host, port))
    listener.listen(2048)
    listener.set_inheritable(True)
    return listener


class ControlChannel:
    """The asyncio side of the control socket: answers inspect, relays /roles queries, starts draining."""

    def __init__(self, link: ChildLink, state: FrontState, server: uvicorn.Server, facts: list[dict]):
        self.link = link
        self.state = state
        self.server = server
        self.facts = facts  # what inspect shows of the tokenizer beside the settings
        self.socket = zmq.asyncio.Socket.from_socket(link.control)
        self.pending: dict[int, asyncio.Future] = {}
        self._ids = itertools.count(1)

    async def inspect_all(self) -> list[dict]:
        query_id = next(self._ids)
        future = asyncio.get_running_loop().create_future()
        self.pending[query_id] = future
        await self.socket.send(encode(InspectQuery(query_id)))
        try:
            return json.loads(await asyncio.wait_for(future, timeout=10))
        finally:
            self.pending.pop(query_id, None)

    async def run(self) -> None:
        while True:
            message = self.link.frames.decode(control_decoder, await self.socket.recv())
            if isinstance(message, InspectQuery):
                entry = live_entry(get_context(), self.link.spec.instance, {"tokenizer": self.facts})
                await self.socket.send(encode(InspectReply(message.query_id, json.dumps([entry]))))
            elif isinstance(message, InspectReply):
                future = self.pending.get(message.query_id)
                if future is not None and not future.done():
                    future.set_result(message.entries_json)
            elif isinstance(message, Shutdown):
                asyncio.ensure_future(self.drain(message.reason, message.drain_timeout_s))
            elif isinstance(message, RoleHealth):
                self.state.unavailable = message.unavailable
            elif isinstance(message, RoleFailed):
                self.on_role_failed(message)

    def on_role_failed(self, message: RoleFailed) -> None:
        """Answer the requests that waited on the failed role now (503 naming it): they cannot finish."""
        state = self.state
        state.failure = message.description
        lost = f"{message.description}; the request was lost with it"
        if message.name.startswith("encoder["):
            if state.embed_client is not None:
                state.embed_client.fail_all(OpenAIError(503, lost, code="role_failed"))
            return
        # With several replicas behind a dp_controller, it tells which requests a restarted replica lost.
        if message.name.startswith("dp_controller[") or state.client.num_schedulers == 1:
            log.warning(
                "%s: answering %d request(s) in flight with 503",
                message.description,
                state.client.num_in_flight,
            )
            state.client.fail_all(lost)

    async def drain(self, reason: str, timeout_s: float) -> None:
        """/health turns 503, new requests get 503, in-flight requests finish (bounded), then exit. Those
        still running at the deadline are answered with a 503 (a stream: an error event and [DONE])."""
        state = self.state
        log.info("draining (%s): %d request(s) in flight", reason, state.client.num_in_flight)
        state.is_draining = True
        deadline = time.monotonic() + timeout_s
        while (state.client.num_in_flight or state.num_active_http) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        if state.client.num_in_flight:
            state.client.fail_all(f"the server shut down ({reason}) before the request finished")
        answered_by = time.monotonic() + 2  # the handlers send those answers
        while state.num_active_http and time.monotonic() < answered_by:
            await asyncio.sleep(0.05)
        self.server.should_exit = True

    async def heartbeat(self) -> None:
        while True:
            await self.socket.send(encode(Heartbeat(self.link.spec.role, self.link.spec.instance)))
            await asyncio.sleep(HEARTBEAT_EVERY_S)


async def note_worker_metrics(state: FrontState) -> None:
    """Keep this worker's in-flight counts fresh for scrapes that reach another worker."""
    while True:
        state.note_worker_metrics()
        await asyncio.sleep(WORKER_METRICS_EVERY_S)


async def serve(link: ChildLink) -> None:
    model, http, chat_template = get_model(), get_http(), get_tokenizer().chat_template
    tokenizer = load_text_tokenizer(model.path, chat_template)
    link.startup.mark("load the tokenizer")
    context = zmq.asyncio.Context.shadow(link.zmq_context.underlying)
    client = EngineClient(link.endpoints, link.spec.instance, context)
    settings = FrontSettings.from_context()
    metrics_class = resolve_collector_class(link.spec.role, ServingMetrics)  # observability.stat_loggers
    metrics = metrics_class(link.spec.instance, link.endpoints.metrics_dir)
    state = FrontState(settings, tokenizer, client, metrics, created=int(time.time()))
    state.unavailable = [STARTING]  # until the launcher says every role requests wait on is ready
    if link.endpoints.num_encoders:
        state.embed_client = EmbedClient(link.endpoints, link.spec.instance, context)
    app = create_app(state, tuple(http.cors_origins))
    listener = bind_listener(http.host, http.port)
    link.startup.mark("build the app and bind the listener")
    config = uvicorn.Config(
        app, loop="none", log_level="warning", access_log=False, lifespan="off", timeout_graceful_shutdown=1
    )
    server = uvicorn.Server(config)
    server.install_signal_handlers = lambda: None  # the launcher owns signals
    control = ControlChannel(link, state, server, tokenizer_facts(model.path, chat_template))
    state.inspect = control.inspect_all
    loops = [client.receive_forever(), control.run(), control.heartbeat(), note_worker_metrics(state)]
    if state.embed_client is not None:
        loops.append(state.embed_client.receive_forever())
    tasks = [asyncio.ensure_future(loop) for loop in loops]
    link.send_ready()
    # Jinja and the model's templates after READY, before the first chat request needs them.
    asyncio.get_running_loop().call_soon(tokenizer.templates.compile_all)
    try:
        await server.serve(sockets=[listener])
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def main(link: ChildLink) -> None:
    uvloop.run(serve(link))
