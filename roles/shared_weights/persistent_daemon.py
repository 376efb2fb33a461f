"""Where the persistent weight_cache_daemon (weight_cache.persist) lives, and whether it is up.

    <run dir>/weight-cache/daemon.lock   flock held by the live daemon for its whole life
    <run dir>/weight-cache/daemon.sock   its ipc socket
The run dir is $XDG_RUNTIME_DIR/roleserve or /tmp/roleserve-<uid>, created 0700.
"""

from __future__ import annotations

import fcntl
import os

import zmq

from roles.shared_weights.client import WeightCacheUnavailable, ask
from roles.shared_weights.messages import Ping, Pong


def cache_dir() -> str:
    base = os.environ.get("XDG_RUNTIME_DIR")
    root = os.path.join(base, "roleserve") if base else f"/tmp/roleserve-{os.getuid()}"
    path = os.path.join(root, "weight-cache")
    os.makedirs(path, mode=0o700, exist_ok=True)
    os.chmod(root, 0o700)
    os.chmod(path, 0o700)
    return path


def lock_path() -> str:
    return os.path.join(cache_dir(), "daemon.lock")


def socket_path() -> str:
    return os.path.join(cache_dir(), "daemon.sock")


def daemon_address() -> str:
    return f"ipc://{socket_path()}"


def is_running(context: zmq.Context) -> bool:
    try:
        with open(lock_path(), "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(handle, fcntl.LOCK_UN)
            return False  # nobody holds it
    except BlockingIOError:
        pass
    try:
        return isinstance(ask(context, daemon_address(), Ping(), timeout_s=5), Pong)
    except WeightCacheUnavailable:
        return False
