"""Small C loops the benchmarks time (bench/int8_peak.py, bench/read_rate.py): compiled on first use with this
machine's `cc` into `.cache/bench/`, one library per source text, and loaded through ctypes. No -march: a
loop that needs an instruction set says so in its own target attribute, as the kernels do."""

from __future__ import annotations

import hashlib
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
CACHE = ROOT / ".cache" / "bench"


def compiled(stem: str, source: str) -> pathlib.Path:
    """The shared library built from `source` (C with OpenMP), named `stem` and the source's digest: built
    once, then found again by the same text."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    path = CACHE / f"{stem}_{digest}.so"
    if not path.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        source_file = CACHE / f"{stem}_{digest}.c"
        source_file.write_text(source)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        built = subprocess.run(
            ["cc", "-O2", "-fopenmp", "-shared", "-fPIC", "-o", str(partial), str(source_file)],
            capture_output=True,
            text=True,
        )
        if built.returncode != 0:
            sys.exit(f"cc could not build {source_file}:\n{built.stderr[-2000:]}")
        partial.replace(path)
    return path
