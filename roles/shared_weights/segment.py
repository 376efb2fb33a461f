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
import torch

from roles.shared_weights.messages import TensorEntry

_ALIGN = 64
_SHM_DIR = "/dev/shm"


def _aligned(value: int) -> int:
    return (value + _ALIGN - 1) // _ALIGN * _ALIGN


def write_segment(
    name: str, tensors: dict[str, torch.Tensor]
) -> tuple[shared_memory.SharedMemory, list[TensorEntry]]:
    """Create segment `name` holding every tensor; the caller owns it (close + unlink)."""
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

    def tensors(self, entries: list[TensorEntry]) -> dict[str, torch.Tensor]:
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
