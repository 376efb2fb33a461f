"""Tiny role entries for the supervisor's unit tests, run in real spawned children.

The `*_role` functions are ChildSpec entries (`tests.launcher.child_entries:<name>`): `child_main` calls them
with a ChildLink after publishing the test role. The others are plain multiprocessing targets.
"""

from __future__ import annotations

import os
import signal
import time

from roles.child_process import ChildLink
from roles.protocol import Ready, encode

FOREIGN_FINGERPRINT = "f" * 64


def wait_for_shutdown(link: ChildLink) -> None:
    """A role's main loop in small: heartbeat, answer control messages, until the launcher says Shutdown."""
    while link.shutdown_reason is None:
        if link.control.poll(100):
            link.poll_control()
        link.heartbeat()


def ready_role(link: ChildLink) -> None:
    """A well-behaved role: READY, then serve until the launcher says Shutdown."""
    link.send_ready()
    wait_for_shutdown(link)


def silent_role(link: ChildLink) -> None:
    """Starts but never reports READY."""
    wait_for_shutdown(link)


def failing_role(link: ChildLink) -> None:
    """Dies with exit code 3 before it could report READY."""
    raise SystemExit(3)


def mute_role(link: ChildLink) -> None:
    """Reports READY, then stays alive but silent, like a stopped or hung process: no heartbeat ever again."""
    link.send_ready()
    while True:
        signal.pause()


def foreign_config_role(link: ChildLink) -> None:
    """Reports READY for a configuration other than the launcher's."""
    spec = link.spec
    link.control.send(encode(Ready(spec.role, spec.instance, os.getpid(), FOREIGN_FINGERPRINT, [])))
    wait_for_shutdown(link)


def sleep_until_killed(started, ignore_sigterm: bool) -> None:
    """A plain child that sets `started` once its signal handling is in place, then waits for a signal."""
    if ignore_sigterm:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    started.set()
    while True:
        signal.pause()


def busy_role(link: ChildLink) -> None:
    """Reports READY and holds a request whose every step blocks its main loop for 3 s (longer than the tests'
    heartbeat and stall timeouts): its heartbeat thread speaks meanwhile and the steps advance."""
    steps = [0]
    link.beat_from_thread(lambda: (steps[0], 1))
    link.send_ready()
    while link.shutdown_reason is None:
        time.sleep(3)  # one long step, the loop blocked
        steps[0] += 1
        link.poll_control()


def stuck_role(link: ChildLink) -> None:
    """Reports READY and says from its heartbeat thread that it holds a request, but never completes a step."""
    link.beat_from_thread(lambda: (0, 1))
    link.send_ready()
    while link.shutdown_reason is None:
        if link.control.poll(100):
            link.poll_control()
