"""Giving back the pages of weights a process no longer reads, where a file backs them.

A GGUF is mapped read-only and shared: its pages are the page cache's, and a process holds them in its
resident set (its PSS) once it has read them. After a part's blocks are repacked (``native.packed_rows``)
the kernels read the packed copy instead, so ``madvise(MADV_DONTNEED)`` drops the file's pages from this
process: its data stays in the file and the page cache, and a later read (an embedding lookup, a path that
takes the file's own blocks) maps a page again. Memory no file backs (anonymous, or written since mapping) is
never dropped: there the call would lose it.
"""

from __future__ import annotations

import ctypes
import functools
import mmap

import numpy as np

MADV_DONTNEED = 4


@functools.lru_cache(maxsize=1)
def _madvise():
    # The process's own symbols, libc's among them: find_library("c") would run `ldconfig -p` at every start.
    libc = ctypes.CDLL(None, use_errno=True)
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    libc.madvise.restype = ctypes.c_int
    return libc.madvise


def file_backed_spans() -> list[tuple[int, int]]:
    """(start, end) of this process's mappings of a file that are shared or read-only (never written
    privately), from /proc/self/maps; [] where there is none."""
    spans = []
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                fields = line.split(maxsplit=5)
                if len(fields) < 6 or fields[4] == "0" or fields[5].startswith("["):
                    continue
                perms = fields[1]
                if "s" in perms or "w" not in perms:
                    start, end = (int(value, 16) for value in fields[0].split("-"))
                    spans.append((start, end))
    except OSError:
        return []
    return spans


def drop_file_pages(array: np.ndarray, spans: list[tuple[int, int]]) -> int:
    """Drops the whole pages of a contiguous ``array``'s bytes from this process's resident set when one of
    ``spans`` (file_backed_spans) holds them all; the bytes dropped (0 when none)."""
    page = mmap.PAGESIZE
    first = array.ctypes.data
    last = first + array.nbytes
    if not any(start <= first and last <= end for start, end in spans):
        return 0
    start = -(-first // page) * page
    end = last // page * page
    if end <= start or _madvise()(start, end - start, MADV_DONTNEED) != 0:
        return 0
    return end - start
