"""This CPU's peak rate of int8 products: the instruction an int8 tile multiplies with, run back to back on
independent registers by every thread, with nothing else in the loop (no loads, no adds, no scales).

    .venv/bin/python bench/int8_peak.py [--threads 2] [--seconds 1]

An int8 linear's tiles (`exec.activation_dtype: int8`) multiply unsigned 8-bit codes by signed 8-bit inputs:
on AVX2 with `vpmaddubsw` (32 products per 256-bit instruction, summed in pairs to int16), on AVX-512 BW with
the same instruction on 512 bits (64), with AVX512_VNNI in `vpdpbusd` (64, summed in fours to int32). What
this prints is the rate the multiply pipes allow for each one the CPU has, a bound no tile can pass; torch's
float32 matmul (`bench/roofline.py`) is the bound of float32 arithmetic, not of these. A product counts as 2
operations, as a multiply-add does in GFLOP/s.

The loop is C, compiled on first use (bench/c_loops.py: each instruction in a function of its own target, as
the kernels are: no -march), and run through ctypes.
"""

from __future__ import annotations

import argparse
import ctypes
import functools
import os
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import c_loops  # noqa: E402
from roles.scheduler.kernels.isa import cpu_flags  # noqa: E402

# Twelve independent chains: each instruction's latency is 3-5 cycles and up to two issue a cycle, so
# twelve keep every pipe busy; each result feeds the next so that none can be hoisted out of the loop.
SOURCE = r"""
#include <immintrin.h>

#define CHAINS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define DECLARE(i) VEC a##i = SET1(i + 1);
#define SINK(i) sink ^= FIRST(a##i);

/* VEC, SET1, FIRST and STEP are defined before each use and undefined after it. */
#define LOOP(name, isa)                                                            \
__attribute__((target(isa))) long name(long iterations, int threads) {           \
    long total = 0;                                                               \
    _Pragma("omp parallel num_threads(threads) reduction(^ : total)")             \
    {                                                                             \
        VEC w = SET1(3);                                                          \
        CHAINS(DECLARE)                                                           \
        for (long n = 0; n < iterations; ++n) {                                   \
            CHAINS(STEP)                                                          \
        }                                                                         \
        int sink = 0;                                                             \
        CHAINS(SINK)                                                              \
        total ^= sink;                                                            \
    }                                                                             \
    return total;                                                                 \
}

#define VEC __m256i
#define SET1 _mm256_set1_epi8
#define FIRST(v) _mm256_extract_epi32(v, 0)
#define STEP(i) a##i = _mm256_maddubs_epi16(a##i, w);
LOOP(rs_peak_vpmaddubsw_ymm, "avx2")
#undef VEC
#undef SET1
#undef FIRST
#undef STEP

#define VEC __m512i
#define SET1 _mm512_set1_epi8
#define FIRST(v) _mm_cvtsi128_si32(_mm512_castsi512_si128(v))
#define STEP(i) a##i = _mm512_maddubs_epi16(a##i, w);
LOOP(rs_peak_vpmaddubsw_zmm, "avx512f,avx512bw")
#undef STEP
#define STEP(i) a##i = _mm512_dpbusd_epi32(a##i, w, w);
LOOP(rs_peak_vpdpbusd_zmm, "avx512f,avx512bw,avx512vnni")
"""

CHAINS = 12
# (function, the /proc/cpuinfo flags it needs, int8 products per instruction)
INSTRUCTIONS = {
    "vpmaddubsw ymm": ("rs_peak_vpmaddubsw_ymm", ("avx2",), 32),
    "vpmaddubsw zmm": ("rs_peak_vpmaddubsw_zmm", ("avx512f", "avx512bw"), 64),
    "vpdpbusd zmm": ("rs_peak_vpdpbusd_zmm", ("avx512f", "avx512bw", "avx512_vnni"), 64),
}


def library_path() -> pathlib.Path:
    """The compiled loops, built on first use of this source text."""
    return c_loops.compiled("int8_peak", SOURCE)


@functools.cache
def library() -> ctypes.CDLL:
    lib = ctypes.CDLL(str(library_path()))
    for function, _, _ in INSTRUCTIONS.values():
        getattr(lib, function).argtypes = [ctypes.c_long, ctypes.c_int]
        getattr(lib, function).restype = ctypes.c_long
    return lib


def available() -> list[str]:
    """The instructions this CPU has, by /proc/cpuinfo (as the kernels' own paths are checked)."""
    flags = cpu_flags()
    return [name for name, (_, needs, _) in INSTRUCTIONS.items() if set(needs) <= flags]


def peak_gop_s(instruction: str, threads: int, seconds: float = 1.0) -> float:
    """2 x int8 products per second for `instruction` on `threads` threads: the best of bounded runs."""
    function, _, products = INSTRUCTIONS[instruction]
    loop = getattr(library(), function)
    iterations = 1 << 16
    loop(iterations, threads)
    while True:  # grow one run to ~50 ms so the threads' start is noise
        started = time.perf_counter()
        loop(iterations, threads)
        if time.perf_counter() - started > 0.05 or iterations >= 1 << 34:
            break
        iterations *= 2
    best = 0.0
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        started = time.perf_counter()
        loop(iterations, threads)
        elapsed = time.perf_counter() - started
        best = max(best, 2 * products * CHAINS * iterations * threads / elapsed / 1e9)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--seconds", type=float, default=1.0)
    args = parser.parse_args()
    names = available()
    if not names:
        sys.exit("this CPU has none of " + ", ".join(INSTRUCTIONS))
    for name in names:
        rate = peak_gop_s(name, args.threads, args.seconds)
        print(f"{name}: {rate:.1f} GOP/s ({rate / 2:.1f} G int8 products/s) on {args.threads} threads")


if __name__ == "__main__":
    main()
