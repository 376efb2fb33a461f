"""A heartbeat a busy loop cannot starve: a thread with its own control socket, carrying the loop's progress.

A scheduler step (a forward pass over a large batch) can take seconds; a heartbeat sent from the loop between
steps goes silent meanwhile and the launcher would take a busy process for a hung one. This thread wakes every
HEARTBEAT_EVERY_S whatever the loop does (the forward pass runs in torch and ctypes calls, which release the
GIL) and says how many steps the loop has completed and how many requests it holds, so the launcher can tell
busy (steps advance) from stuck (requests held, no step completes). Only a process that does not run at all
(stopped, or a native call that holds the GIL) falls silent.

ZMQ sockets are not thread-safe, so the thread has its own DEALER, named after the child with BEAT_SUFFIX: the
launcher reads it as the child's own voice.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import zmq

from roles.endpoints import Endpoints
from roles.protocol import Heartbeat, encode
from roles.sockets import connect

# How often a child says it is alive: a few times within the shortest launcher.late_after_s (1 s).
HEARTBEAT_EVERY_S = 0.25
BEAT_SUFFIX = "+beat"  # the heartbeat thread's socket identity: the child's name and this


class HeartbeatThread:
    """Sends Heartbeat(role, instance, num_steps, num_unfinished) every HEARTBEAT_EVERY_S until stopped.

    progress() returns (steps completed, requests held); it runs on this thread, so it must only read plain
    attributes the loop assigns (an int read is atomic), never walk the loop's containers."""

    def __init__(
        self,
        context: zmq.Context,
        endpoints: Endpoints,
        role: str,
        instance: int,
        progress: Callable[[], tuple[int, int]],
    ):
        self.socket = context.socket(zmq.DEALER)
        self.socket.setsockopt(zmq.IDENTITY, f"{role}[{instance}]{BEAT_SUFFIX}".encode())
        self.socket.setsockopt(zmq.LINGER, 0)
        connect(self.socket, endpoints.control, endpoints.curve)
        self.role, self.instance, self.progress = role, instance, progress
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="heartbeat", daemon=True)

    def start(self) -> HeartbeatThread:
        self._thread.start()
        return self

    def _beat(self) -> None:
        try:
            while not self._stopped.wait(HEARTBEAT_EVERY_S):
                num_steps, num_unfinished = self.progress()
                beat = Heartbeat(self.role, self.instance, num_steps, num_unfinished)
                try:
                    self.socket.send(encode(beat), zmq.NOBLOCK)
                except zmq.Again:
                    pass  # the launcher is not reading: the next beat says the same
        finally:
            self.socket.close(0)

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join(2 * HEARTBEAT_EVERY_S + 1)
