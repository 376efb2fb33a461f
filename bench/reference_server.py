"""Another server started for a benchmark (llama.cpp's llama-server, ...): ready when its /health answers 200,
always stopped. Loopback only; the wait is bounded."""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Iterator

import httpx
import psutil


@contextlib.contextmanager
def reference_server(
    argv: list[str], url: str, timeout_s: float = 300
) -> Iterator[tuple[subprocess.Popen, float]]:
    """(the process, seconds until its /health answered 200); stopped when the block ends."""
    started = time.monotonic()
    process = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        while True:
            if process.poll() is not None or time.monotonic() - started > timeout_s:
                raise SystemExit(f"the reference server did not start: {' '.join(argv)}")
            try:
                if httpx.get(url + "/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.02)
        yield process, time.monotonic() - started
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()


def tree_pss_mib(pid: int) -> float:
    """The proportional set size of a process and all its children."""
    root = psutil.Process(pid)
    total = 0
    for process in [root, *root.children(recursive=True)]:
        try:
            total += process.memory_full_info().pss
        except psutil.NoSuchProcess:
            pass
    return total / 2**20
