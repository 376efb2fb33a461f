"""How fast this machine reads memory: the bound of a one-sequence decode step, which reads every weight once
per token and does little with each.

    .venv/bin/python bench/read_rate.py [--threads 2] [--mib 1024]

The loop is C (bench/c_loops.py): every thread reads its own contiguous share of an array far larger than any
cache, sixteen bytes a load into eight independent XOR accumulators, nothing else in the loop; the rate is the
array's bytes over the best of a few passes. A decode step at c=1 runs on every thread of the engine, so its
GB/s of weights (`bench/peers.py`'s "c=1 GB/s") is held against the rate on the same number of threads, not
one core's.
"""

from __future__ import annotations

import argparse
import ctypes
import functools
import os
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from bench import c_loops  # noqa: E402

SOURCE = r"""
#include <stddef.h>

/* sixteen bytes, loaded without assuming their alignment */
typedef long long rs_words __attribute__((vector_size(16), aligned(1)));

/* The XOR of every 8-byte word of data[0, bytes), bytes a multiple of 128: each thread reads its share. */
long long rs_read(const rs_words* data, size_t bytes, int threads) {
    long long total = 0;
    const size_t words = bytes / 16;
#pragma omp parallel num_threads(threads) reduction(^ : total)
    {
        rs_words a0 = {0, 0}, a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
#pragma omp for schedule(static)
        for (size_t i = 0; i < words; i += 8) {
            a0 ^= data[i], a1 ^= data[i + 1], a2 ^= data[i + 2], a3 ^= data[i + 3];
            a4 ^= data[i + 4], a5 ^= data[i + 5], a6 ^= data[i + 6], a7 ^= data[i + 7];
        }
        const rs_words all = a0 ^ a1 ^ a2 ^ a3 ^ a4 ^ a5 ^ a6 ^ a7;
        total ^= all[0] ^ all[1];
    }
    return total;
}
"""

STRIDE = 128  # bytes a loop iteration reads


@functools.cache
def library() -> ctypes.CDLL:
    lib = ctypes.CDLL(str(c_loops.compiled("read_rate", SOURCE)))
    lib.rs_read.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    lib.rs_read.restype = ctypes.c_longlong
    return lib


def xor_of(data: np.ndarray, threads: int) -> int:
    """The loop's result over `data` (contiguous, a multiple of 128 bytes): the XOR of its 8-byte words."""
    if not data.flags.c_contiguous or data.nbytes % STRIDE:
        raise ValueError(f"the loop reads contiguous data in {STRIDE}-byte steps, not {data.nbytes} bytes")
    return library().rs_read(data.ctypes.data, data.nbytes, threads)


def read_gb_s(threads: int, mib: int = 1024, repeats: int = 5) -> float:
    """Bytes per second (1e9) that `threads` threads read of a `mib` MiB array, the best of `repeats` passes
    after one that is not counted."""
    data = np.ones(mib * 2**20 // 8, dtype=np.int64)  # written: every page is in memory before the timing
    xor_of(data, threads)
    best = 0.0
    for _ in range(repeats):
        started = time.perf_counter()
        xor_of(data, threads)
        best = max(best, data.nbytes / (time.perf_counter() - started) / 1e9)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--mib", type=int, default=1024)
    args = parser.parse_args()
    for threads in sorted({1, args.threads}):
        print(f"reading {args.mib} MiB: {read_gb_s(threads, args.mib):.1f} GB/s on {threads} thread(s)")


if __name__ == "__main__":
    main()
