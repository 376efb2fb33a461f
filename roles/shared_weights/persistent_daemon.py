"""Where the persistent weight_cache_daemon (weight_cache.persist) lives, and whether it is up.

    <run dir>/weight-cache/daemon.lock   flock held by the live daemon for its whole life
    <run dir>/weight-cache/daemon.sock   its ipc socket
The run dir is $XDG_RUNTIME_DIR/roleserve or <temp dir>/roleserve-<uid>: made, or accepted only when private to
this user, by roles/shared_weights/private_dir.py.
"""

from __future__ import annotations

import fcntl
import os

import zmq

from roles.shared_weights.asking import WeightCacheUnavailable, ask
from roles.shared_weights.messages import Ping, Pong
from roles.shared_weights.private_dir import ensure_private_dir, open_private_file, private_run_dir


def cache_dir() -> str:
    return ensure_private_dir(os.path.join(private_run_dir(), "weight-cache"))


def open_lock() -> int:
    """The daemon lock file's descriptor (created 0600, never through a symlink)."""
    return open_private_file(lock_path(), os.O_WRONLY | os.O_APPEND)


def lock_path() -> str:
    return os.path.join(cache_dir(), "daemon.lock")


def socket_path() -> str:
    return os.path.join(cache_dir(), "daemon.sock")


def daemon_address() -> str:
    return f"ipc://{socket_path()}"


def is_running(context: zmq.Context) -> bool:
    descriptor = open_lock()
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(descriptor, fcntl.LOCK_UN)
        return False  # nobody holds it
    except BlockingIOError:
        pass
    finally:
        os.close(descriptor)
    try:
        return isinstance(ask(context, daemon_address(), Ping(), timeout_s=5), Pong)
    except WeightCacheUnavailable:
        return False
