"""A directory only this user can reach, made safely even inside a shared temporary directory.

Another user may have created the path first (to read what we write there, or to point it elsewhere with a
symlink). So the dir is created exclusively, and a dir that already exists is accepted only when it is a real
directory (never followed through a symlink), owned by this user, with no group or other permission bits.
"""

from __future__ import annotations

import os
import stat
import tempfile

from roles.shared_weights.asking import WeightCacheUnavailable


class UnsafeDirectory(WeightCacheUnavailable):
    """The dir exists but another user could reach it or owns it: refused, never repaired."""


def _open_dir(path: str) -> int:
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)


def private_dir_problem(path: str, uid: int | None = None) -> str | None:
    """Why `path` is not a private dir of user `uid` (this user by default), or None when it is one."""
    uid = os.geteuid() if uid is None else uid
    try:
        descriptor = _open_dir(path)
    except FileNotFoundError:
        return "it does not exist"
    except OSError:
        kind = "a symbolic link" if os.path.islink(path) else "not a directory"
        return f"it is {kind}"
    try:
        info = os.fstat(descriptor)  # the dir just opened, not whatever the path names a moment later
    finally:
        os.close(descriptor)
    if info.st_uid != uid:
        return f"it is owned by uid {info.st_uid}, not by uid {uid}"
    if info.st_mode & 0o077:
        return (
            f"its mode is {stat.S_IMODE(info.st_mode):04o}: group or others can reach it (0700 is required)"
        )
    return None


def ensure_private_dir(path: str, uid: int | None = None) -> str:
    """Create `path` 0700, or accept the existing one only if it is already private to this user."""
    try:
        os.mkdir(path, 0o700)  # exclusive: fails when anything, even a dangling symlink, is there
    except FileExistsError:
        pass
    problem = private_dir_problem(path, uid)
    if problem is not None:
        raise UnsafeDirectory(
            f"refusing {path}: {problem}; remove it (or set XDG_RUNTIME_DIR to a private dir)"
        )
    return path


def private_run_dir() -> str:
    """$XDG_RUNTIME_DIR/roleserve when XDG_RUNTIME_DIR is a private dir of this user, else
    <temp dir>/roleserve-<uid>; either is made or checked by ensure_private_dir."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    if base and private_dir_problem(base) is None:
        return ensure_private_dir(os.path.join(base, "roleserve"))
    return ensure_private_dir(os.path.join(tempfile.gettempdir(), f"roleserve-{os.geteuid()}"))


def open_private_file(path: str, flags: int) -> int:
    """os.open that never follows a symlink and creates the file 0600."""
    return os.open(path, flags | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
