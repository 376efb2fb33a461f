"""weight_cache.persist: one daemon per user in a well-known run dir (``shared_weights.persistent_daemon``),
outliving any `serve`: started detached here, and its entry."""

from __future__ import annotations

import fcntl
import json
import logging
import os
import signal
import subprocess
import sys
import time

import zmq

from roles.shared_weights.asking import WeightCacheUnavailable, ask
from roles.shared_weights.messages import Ping, Pong
from roles.shared_weights.persistent_daemon import (
    cache_dir,
    daemon_address,
    is_running,
    open_lock,
    socket_path,
)
from roles.shared_weights.private_dir import open_private_file

SEGMENT_PREFIX = "roleserve-wcp-"


def ensure_daemon(wire: dict, timeout_s: float) -> str:
    """Attach to the live daemon, or start one detached; return its address."""
    context = zmq.Context.instance()
    if is_running(context):
        return daemon_address()
    log_path = os.path.join(cache_dir(), "daemon.log")
    with os.fdopen(open_private_file(log_path, os.O_WRONLY | os.O_APPEND), "ab") as log_file:
        process = subprocess.Popen(
            [sys.executable, "-m", "roles.weight_cache.persistent"],
            stdin=subprocess.PIPE,
            stdout=log_file,
            stderr=log_file,
            start_new_session=True,
            close_fds=True,
        )
        process.stdin.write(json.dumps(wire).encode())
        process.stdin.close()
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise WeightCacheUnavailable(
                f"the persistent weight_cache_daemon exited ({process.returncode}); see {log_path}"
            )
        try:
            if isinstance(ask(context, daemon_address(), Ping(), timeout_s=1), Pong):
                return daemon_address()
        except WeightCacheUnavailable:
            time.sleep(0.1)
    raise WeightCacheUnavailable(f"the persistent weight_cache_daemon did not start within {timeout_s:g}s")


def run_persistent() -> None:
    """Entry of the detached daemon: publish the role first, take the lock, serve until dropped or signalled."""
    from roles.weight_cache.role import ROLE
    from runtime_context import ResolvedConfig, get_observability, publish

    publish(
        ResolvedConfig.from_wire(json.loads(sys.stdin.read())), role=ROLE.name, projection=ROLE.projection
    )
    logging.basicConfig(
        level=get_observability().log_level.upper(),
        format="%(asctime)s weight_cache_daemon(persistent) %(levelname)s: %(message)s",
    )
    from roles.shared_weights.daemon import SharedWeightsDaemon, bind_router, run
    from roles.shared_weights.store import WeightStore

    lock = open_lock()  # held for the process's life
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        sys.exit(0)  # another daemon won the race; it serves
    if os.path.exists(socket_path()):
        os.unlink(socket_path())
    daemon = SharedWeightsDaemon(
        bind_router(zmq.Context.instance(), daemon_address()), WeightStore(SEGMENT_PREFIX)
    )
    try:
        run(daemon, signals=(signal.SIGTERM, signal.SIGINT))
    finally:
        if os.path.exists(socket_path()):
            os.unlink(socket_path())


if __name__ == "__main__":
    run_persistent()
