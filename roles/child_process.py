"""What every role process does first: die with the launcher, publish its role, report READY.

The launcher spawns `child_main` (spawn start method; roles that preload are forked from the launcher's
preloaded parent, launcher/preloaded_parent.py) with the role's projection of the resolved record in wire
form; the role's entry then runs with a ChildLink for its control channel.
"""

from __future__ import annotations

import ctypes
import importlib
import json
import logging
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass

import zmq

from roles.endpoints import Endpoints
from roles.heartbeat import HEARTBEAT_EVERY_S, HeartbeatThread
from roles.protocol import (
    FrameCounter,
    Heartbeat,
    InspectQuery,
    InspectReply,
    Ready,
    Shutdown,
    control_decoder,
    encode,
)
from roles.sockets import connect
from roles.startup_phases import StartupPhases
from runtime_context import ResolvedConfig, get_context, publish
from runtime_context.inspect_report import live_entry

_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class ChildSpec:
    role: str
    instance: int
    entry: str  # "package.module:function", called with a ChildLink
    projection: frozenset[str]  # the namespaces the role declares: what it publishes and receives
    serves_requests: bool = False  # requests wait on it (RoleDescription.serves_requests)
    preload: bool = False  # forked from the preloaded parent (RoleDescription.preload)

    @property
    def name(self) -> str:
        return f"{self.role}[{self.instance}]"


def let_go_of_preloaded_parent() -> None:
    """A process forked from the launcher's preloaded parent (the forkserver) inherits the pipe by which that
    parent knows the launcher lives: held here, it would keep the parent, and through PR_SET_PDEATHSIG this
    process, alive after a SIGKILLed launcher. No role starts processes through it, so close it."""
    from multiprocessing import forkserver

    server = forkserver._forkserver  # the standard library's one instance; no public accessor
    if getattr(server, "_forkserver_alive_fd", None) is not None:
        os.close(server._forkserver_alive_fd)
        server._forkserver_alive_fd = None


def die_with_parent(parent_pid: int) -> None:
    """PR_SET_PDEATHSIG covers a SIGKILLed parent; the pid watch covers the race before prctl ran.

    The parent is the launcher, or for a preloaded role the launcher's preloaded parent, which exits when
    the launcher does."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except OSError:
        pass
    if os.getppid() != parent_pid:
        os._exit(1)

    def watch() -> None:
        while True:
            if os.getppid() != parent_pid:
                os._exit(1)
            time.sleep(0.5)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


class ChildLink:
    """A child's end of the control channel: READY, heartbeats, inspect answers, shutdown notice."""

    def __init__(self, spec: ChildSpec, endpoints: Endpoints):
        self.spec = spec
        self.endpoints = endpoints
        self.zmq_context = zmq.Context.instance()
        self.control = self.zmq_context.socket(zmq.DEALER)
        self.control.setsockopt(zmq.IDENTITY, spec.name.encode())
        self.control.setsockopt(zmq.LINGER, 1000)
        connect(self.control, endpoints.control, endpoints.curve)
        self.frames = FrameCounter()
        self.shutdown_reason: str | None = None
        # What this process built from its config, stated in its inspect answers (JSON values by name).
        self.facts: dict = {}
        self._last_heartbeat = 0.0
        self._beat_thread: HeartbeatThread | None = None
        self.startup = STARTUP  # the role marks its own build steps: link.startup.mark("load model")

    def send_ready(self) -> None:
        self.startup.report(self.spec.name)
        context = get_context()
        view = context.view
        assert view is not None and context.fingerprint is not None
        self.control.send(
            encode(
                Ready(
                    self.spec.role, self.spec.instance, os.getpid(), context.fingerprint, sorted(view.allowed)
                )
            )
        )

    def beat_from_thread(self, progress) -> None:
        """Heartbeats from a thread from now on, with the loop's progress (roles/heartbeat.py): for a loop
        whose turns can take longer than launcher.late_after_s. heartbeat() becomes a no-op."""
        self._beat_thread = HeartbeatThread(
            self.zmq_context, self.endpoints, self.spec.role, self.spec.instance, progress
        ).start()

    def heartbeat(self) -> None:
        """Tell the launcher this process is alive; cheap to call every loop turn (sends once per HEARTBEAT_EVERY_S).

        A loop must call it at least every second or so: the launcher takes a ready child that stays silent for
        launcher.late_after_s for late and launcher.heartbeat_timeout_s for hung, so no loop may block longer
        than that without calling it (or it beats from a thread: beat_from_thread)."""
        if self._beat_thread is not None:
            return
        now = time.monotonic()
        if now - self._last_heartbeat >= HEARTBEAT_EVERY_S:
            self._last_heartbeat = now
            self.control.send(encode(Heartbeat(self.spec.role, self.spec.instance)))

    def handle_control_frame(self, frame: bytes) -> None:
        message = self.frames.decode(control_decoder, frame)
        if isinstance(message, InspectQuery):
            entry = live_entry(get_context(), instance=self.spec.instance, facts=self.facts)
            self.control.send(encode(InspectReply(message.query_id, json.dumps([entry]))))
        elif isinstance(message, Shutdown):
            self.shutdown_reason = message.reason

    def poll_control(self) -> None:
        """Non-blocking: answer whatever control messages are waiting (for loops that are not asyncio)."""
        while self.control.poll(0):
            self.handle_control_frame(self.control.recv())


# Begun again by child_main, the first thing a role process runs: the phases before it count as the process's
# start (interpreter and unpickling the spec after a spawn; next to nothing after a fork from the preloaded
# parent, which imported this module).
STARTUP = StartupPhases()


def publish_role(spec: ChildSpec, wire: dict) -> None:
    """First act of every role process: publish its projection of the one resolved config, before building
    anything; then log as the role."""
    publish(ResolvedConfig.from_wire(wire), role=spec.role, projection=spec.projection)
    from runtime_context import get_observability

    logging.basicConfig(
        level=get_observability().log_level.upper(),
        format=f"%(asctime)s {spec.name} %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
        force=True,
    )


def run_entry(spec: ChildSpec, endpoints: Endpoints) -> None:
    """Run the role's entry with its control channel until the role returns."""
    module_name, _, function_name = spec.entry.partition(":")
    entry = getattr(importlib.import_module(module_name), function_name)
    STARTUP.mark(f"import {module_name}")
    link = ChildLink(spec, endpoints)
    try:
        entry(link)
    finally:
        if link._beat_thread is not None:
            link._beat_thread.stop()
        link.control.close(linger=1000)


def child_main(
    spec: ChildSpec, wire: dict, endpoints: Endpoints, parent_pid: int, model_headers: list = ()
) -> None:
    """model_headers: the GGUF headers the launcher parsed (gguf_file.opened()), kept here so the role's
    own opens of those files read no header again."""
    STARTUP.begin()
    let_go_of_preloaded_parent()
    die_with_parent(parent_pid)
    if model_headers:
        from roles.model_files.gguf_file import remember

        remember(model_headers)
    publish_role(spec, wire)
    STARTUP.mark("publish the config")
    # The launcher owns shutdown: a terminal's Ctrl-C reaches the whole process group, ignore it here.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    run_entry(spec, endpoints)
