"""What makes cached weights the right weights: the file (path, size, mtime), how it is executed
(weight dtype) and the layout version of the execution format. Any difference is a different entry."""

from __future__ import annotations

import hashlib
import os

import msgspec

FORMAT_VERSION = 1  # bump when the converted layout of any weight mode changes


class ModelIdentity(msgspec.Struct, frozen=True):
    path: str  # resolved absolute path of the .gguf file or the HF folder
    size: int  # bytes (the sum over a folder's files)
    mtime_ns: int  # the newest mtime of those files
    weight_dtype: str
    format_version: int = FORMAT_VERSION

    @property
    def key(self) -> str:
        """Short stable name, used for the shared-memory segment."""
        canonical = msgspec.json.encode(self)
        return hashlib.sha256(canonical).hexdigest()[:20]


def _files_of(path: str) -> list[str]:
    if os.path.isdir(path):
        return sorted(
            os.path.join(path, name) for name in os.listdir(path) if os.path.isfile(os.path.join(path, name))
        )
    return [path]


def identity_of(resolved_path: str, weight_dtype: str) -> ModelIdentity:
    files = _files_of(resolved_path)
    stats = [os.stat(f) for f in files]
    return ModelIdentity(
        path=os.path.abspath(resolved_path),
        size=sum(s.st_size for s in stats),
        mtime_ns=max((s.st_mtime_ns for s in stats), default=0),
        weight_dtype=weight_dtype,
    )
