"""The server's private runtime dir (0700) that holds its ipc:// sockets; removed on shutdown."""

from __future__ import annotations

import os
import shutil
import tempfile


def make_runtime_dir(parent: str | None) -> str:
    if parent is not None:
        os.makedirs(parent, exist_ok=True)
    path = tempfile.mkdtemp(prefix="roleserve-", dir=parent)  # mkdtemp creates it 0700
    os.chmod(path, 0o700)
    return path


def remove_runtime_dir(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)
