"""A shared-weights daemon: answer weight queries from its store, loading each identity once.

The weight_cache_daemon serves whole models with it, the expert_backup every expert of an MoE model.
"""

from __future__ import annotations

import logging
import os
import queue
import signal

import msgspec
import zmq

from roles.child_process import ChildLink
from roles.shared_weights.messages import (
    DropEntries,
    Dropped,
    EntryList,
    ListEntries,
    Ping,
    Pong,
    WeightAnswer,
    WeightQuery,
    cache_decoder,
    cache_encoder,
)
from roles.shared_weights.store import WeightStore

log = logging.getLogger("roleserve.shared_weights")


class SharedWeightsDaemon:
    def __init__(self, socket: zmq.Socket, store: WeightStore):
        self.socket = socket
        self.store = store
        self.waiting: dict[str, list[tuple[bytes, WeightQuery]]] = {}
        self.finished: queue.SimpleQueue = queue.SimpleQueue()  # identities whose load ended (worker thread)
        self.num_dropped_frames = 0
        self.stop_requested = False

    def reply(self, client: bytes, message) -> None:
        self.socket.send_multipart([client, b"", cache_encoder.encode(message)])

    def handle(self, client: bytes, frame: bytes) -> None:
        try:
            message = cache_decoder.decode(frame)
        except (msgspec.DecodeError, msgspec.ValidationError):
            self.num_dropped_frames += 1
            return
        if isinstance(message, Ping):
            self.reply(client, Pong(os.getpid(), len(self.store.entries)))
        elif isinstance(message, WeightQuery):
            self.query(client, message)
        elif isinstance(message, ListEntries):
            self.reply(client, EntryList(os.getpid(), self.store.infos()))
        elif isinstance(message, DropEntries):
            self.reply(client, Dropped(self.store.drop(message.key)))
            self.stop_requested = message.stop_daemon

    def query(self, client: bytes, message: WeightQuery) -> None:
        identity = message.identity
        stale = self.store.check_current(identity)
        if stale is not None:
            self.reply(client, WeightAnswer(identity, error=stale))
            return
        answer = self.store.lookup(identity)
        if answer is not None:
            self.reply(client, answer)
            return
        self.waiting.setdefault(identity.key, []).append((client, message))
        self.store.start_load(identity, self.finished.put)

    def answer_finished(self) -> None:
        while not self.finished.empty():
            identity = self.finished.get()
            for client, message in self.waiting.pop(identity.key, []):
                answer = self.store.lookup(message.identity)
                self.reply(client, answer or WeightAnswer(identity, error="load finished without an entry"))

    def serve(self, link: ChildLink | None = None) -> None:
        poller = zmq.Poller()
        poller.register(self.socket, zmq.POLLIN)
        if link is not None:
            poller.register(link.control, zmq.POLLIN)
        while not self.stop_requested and (link is None or link.shutdown_reason is None):
            events = dict(poller.poll(50))
            if link is not None and link.control in events:
                link.poll_control()
            while self.socket.poll(0):
                parts = self.socket.recv_multipart()
                if len(parts) != 3 or parts[1]:  # a REQ peer sends [identity, empty delimiter, frame]
                    self.num_dropped_frames += 1
                    continue
                self.handle(parts[0], parts[2])
            self.answer_finished()
            if link is not None:
                link.heartbeat()

    def close(self) -> None:
        self.store.close()
        self.socket.close(0)


def bind_router(context: zmq.Context, address: str) -> zmq.Socket:
    socket = context.socket(zmq.ROUTER)
    socket.setsockopt(zmq.LINGER, 0)
    socket.bind(address)
    return socket


def stop_on_signals(daemon: SharedWeightsDaemon, *signals: signal.Signals) -> None:
    """Leave the serve loop on these signals, so that ``close`` unlinks every segment. The launcher may
    terminate its children before they read its Shutdown; dying by the signal's default action would leave
    the segments to multiprocessing's resource tracker, which unlinks them with a "leaked shared_memory
    objects" warning at shutdown."""

    def stop(signum, frame) -> None:
        daemon.stop_requested = True

    for signum in signals:
        signal.signal(signum, stop)


def run(daemon: SharedWeightsDaemon, link: ChildLink | None = None, signals=(signal.SIGTERM,)) -> None:
    """Serve until the launcher's Shutdown, a drop that stops the daemon, or one of ``signals``; then unlink
    every segment."""
    stop_on_signals(daemon, *signals)
    try:
        daemon.serve(link)
    finally:
        daemon.close()
