"""weight_cache.persist: one daemon per user in a well-known run dir, outliving any `serve`.

    <run dir>/weight-cache/daemon.lock   flock held by the live daemon for its whole life
    <run dir>/weight-cache/daemon.sock   its ipc socket
The run dir is $XDG_RUNTIME_DIR/roleserve or /tmp/roleserve-<uid>, created 0700.
"""

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

from roles.weight_cache.client import WeightCacheUnavailable, ask
from roles.weight_cache.messages import Ping, Pong

SEGMENT_PREFIX = "roleserve-wcp-"


def cache_dir() -> str:
    base = os.environ.get("XDG_RUNTIME_DIR")
    root = os.path.join(base, "roleserve") if base else f"/tmp/roleserve-{os.getuid()}"
    path = os.path.join(root, "weight-cache")
    os.makedirs(path, mode=0o700, exist_ok=True)
    os.chmod(root, 0o700)
    os.chmod(path, 0o700)
    return path


def daemon_address() -> str:
    return f"ipc://{cache_dir()}/daemon.sock"


def is_running(context: zmq.Context) -> bool:
    lock_path = os.path.join(cache_dir(), "daemon.lock")
    try:
        with open(lock_path, "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(handle, fcntl.LOCK_UN)
            return False  # nobody holds it
    except BlockingIOError:
        pass
    try:
        return isinstance(ask(context, daemon_address(), Ping(), timeout_s=5), Pong)
    except WeightCacheUnavailable:
        return False


def ensure_daemon(wire: dict, timeout_s: float) -> str:
    """Attach to the live daemon, or start one detached; return its address."""
    context = zmq.Context.instance()
    if is_running(context):
        return daemon_address()
    log_path = os.path.join(cache_dir(), "daemon.log")
    with open(log_path, "ab") as log_file:
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
    from roles.weight_cache.daemon import WeightCacheDaemon, bind_router
    from roles.weight_cache.store import WeightStore

    lock = open(os.path.join(cache_dir(), "daemon.lock"), "a")  # noqa: SIM115 (held for the process's life)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        sys.exit(0)  # another daemon won the race; it serves
    socket_path = os.path.join(cache_dir(), "daemon.sock")
    if os.path.exists(socket_path):
        os.unlink(socket_path)
    daemon = WeightCacheDaemon(
        bind_router(zmq.Context.instance(), daemon_address()), WeightStore(SEGMENT_PREFIX)
    )

    def stop(signum, frame) -> None:
        daemon.stop_requested = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        daemon.serve()
    finally:
        daemon.close()
        if os.path.exists(socket_path):
            os.unlink(socket_path)


if __name__ == "__main__":
    run_persistent()
