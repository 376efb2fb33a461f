"""Tensors in one POSIX shared-memory segment (owner-only, 0600), mapped read-only by readers without a copy.

Layout: tensors back to back, each at a 64-byte aligned offset; the index (name, dtype, shape, offset)
travels in the daemon's answer, never inside the segment, so readers need no parsing of shared bytes.
"""

from __future__ import annotations

import mmap
import os
import warnings
from multiprocessing import shared_memory

import numpy as np

from roles.shared_weights.messages import TensorEntry

_ALIGN = 64
_SHM_DIR = "/dev/shm"
# The entries' dtypes (torch's names) numpy has too: an auto model's blocks, type ids and float32 vectors.
_NUMPY_DTYPES = {name: np.dtype(name) for name in ("float32", "float16", "uint8", "int8", "int32", "int64")}


def _aligned(value: int) -> int:
    return (value + _ALIGN - 1) // _ALIGN * _ALIGN


def write_segment(name: str, tensors: dict) -> tuple[shared_memory.SharedMemory, list[TensorEntry]]:
    """Create segment `name` holding every tensor (torch); the caller owns it (close + unlink)."""
    import torch

    entries, offset = [], 0
    for tensor_name, tensor in tensors.items():
        nbytes = tensor.numel() * tensor.element_size()
        entries.append(
            TensorEntry(
                tensor_name, str(tensor.dtype).removeprefix("torch."), list(tensor.shape), offset, nbytes
            )
        )
        offset = _aligned(offset + nbytes)
    segment = shared_memory.SharedMemory(name=name, create=True, size=max(offset, _ALIGN))
    os.fchmod(segment._fd, 0o600)  # owner-only, whatever the umask
    buffer = np.ndarray((segment.size,), dtype=np.uint8, buffer=segment.buf)
    for entry, tensor in zip(entries, tensors.values(), strict=True):
        raw = tensor.detach().contiguous().view(torch.uint8).reshape(-1).numpy()
        buffer[entry.offset : entry.offset + entry.nbytes] = raw
    del buffer
    return segment, entries


class MappedSegment:
    """A read-only mapping of a segment; tensors made from it share its pages (no copy)."""

    def __init__(self, name: str):
        fd = os.open(os.path.join(_SHM_DIR, name), os.O_RDONLY)
        try:
            size = os.fstat(fd).st_size
            self.map = mmap.mmap(fd, size, prot=mmap.PROT_READ)
        finally:
            os.close(fd)
        self.name = name

    def arrays(self, entries: list[TensorEntry]) -> dict[str, np.ndarray] | None:
        """Read-only numpy arrays over the mapping (no copy, no torch), or None when numpy lacks an entry's
        dtype (bfloat16 scales of the int8 and int4 modes)."""
        if any(entry.dtype not in _NUMPY_DTYPES for entry in entries):
            return None
        out = {}
        for entry in entries:
            dtype = _NUMPY_DTYPES[entry.dtype]
            flat = np.frombuffer(
                self.map, dtype=dtype, count=entry.nbytes // dtype.itemsize, offset=entry.offset
            )
            out[entry.name] = flat.reshape(entry.shape)
        return out

    def tensors(self, entries: list[TensorEntry]) -> dict:
        """torch tensors over the mapping (no copy)."""
        import torch

        out = {}
        with warnings.catch_warnings():
            # The mapping is read-only on purpose: a write through these tensors would fault, not corrupt.
            warnings.filterwarnings("ignore", message="The given buffer is not writable")
            for entry in entries:
                dtype = getattr(torch, entry.dtype)
                count = entry.nbytes // torch.empty((), dtype=dtype).element_size()
                flat = torch.frombuffer(self.map, dtype=dtype, count=count, offset=entry.offset)
                out[entry.name] = flat.view(entry.shape)
        return out


def segment_exists(name: str) -> bool:
    return os.path.exists(os.path.join(_SHM_DIR, name))
