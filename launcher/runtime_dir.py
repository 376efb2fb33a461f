"""The server's private runtime dir (0700) that holds its ipc:// sockets; removed on shutdown.

It names its launcher (a `launcher.pid` file), so a dir left behind by a launcher that was SIGKILLed is
found and removed by the next server that starts in the same parent dir: only dirs of this user, whose
launcher process is gone.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
import tempfile

log = logging.getLogger("roleserve.launcher")

_PREFIX = "roleserve-"
_PID_FILE = "launcher.pid"


def make_runtime_dir(parent: str | None) -> str:
    if parent is not None:
        os.makedirs(parent, exist_ok=True)
    remove_stale_runtime_dirs(parent or tempfile.gettempdir())
    path = tempfile.mkdtemp(prefix=_PREFIX, dir=parent)  # mkdtemp creates it 0700
    os.chmod(path, 0o700)
    with open(os.path.join(path, _PID_FILE), "w", encoding="ascii") as file:
        file.write(str(os.getpid()))
    return path


def _launcher_alive(path: str) -> bool:
    """True unless the dir names a launcher pid that no longer exists (unknown: keep it)."""
    try:
        with open(os.path.join(path, _PID_FILE), encoding="ascii") as file:
            pid = int(file.read().strip())
    except (OSError, ValueError):
        return True  # no pid yet (a server starting now) or not ours to judge
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_runtime_dirs(parent: str) -> list[str]:
    """Remove this user's runtime dirs whose launcher is gone; returns their paths."""
    removed = []
    try:
        names = [name for name in os.listdir(parent) if name.startswith(_PREFIX)]
    except OSError:
        return removed
    for name in names:
        path = os.path.join(parent, name)
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            continue  # a symlink, a file, or another user's: never ours to remove
        if not _launcher_alive(path):
            shutil.rmtree(path, ignore_errors=True)
            log.info("removed %s, left behind by a launcher that is gone", path)
            removed.append(path)
    return removed


def make_metrics_dir(path: str) -> None:
    """An empty private dir for the tokenizers' metric files: whatever an earlier run left there is wiped,
    or a scrape would add it to this run's counts."""
    shutil.rmtree(path, ignore_errors=True)
    os.mkdir(path, 0o700)


def remove_runtime_dir(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)
