"""Another server started for a benchmark (llama.cpp's llama-server, ...): ready when its /health answers 200,
always stopped. Loopback only; the wait is bounded."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator

import httpx
import psutil


def bytecode_note(environ: dict | None = None) -> str:
    """Whether the Python servers measured here write their bytecode: with PYTHONDONTWRITEBYTECODE set (to any
    non-empty value), every process compiles its modules again at every start, so ready after start is slower than
    a normal install's."""
    if (os.environ if environ is None else environ).get("PYTHONDONTWRITEBYTECODE"):
        return (
            "Python bytecode: not written (PYTHONDONTWRITEBYTECODE is set): every start compiles each process's"
            " modules, so the Python servers' ready times are slower than a normal install's"
        )
    return "Python bytecode: written, as a normal install does"


@contextlib.contextmanager
def reference_server(
    argv: list[str], url: str, timeout_s: float = 300, env: dict | None = None, log: str | None = None
) -> Iterator[tuple[subprocess.Popen, float]]:
    """(the process, seconds until its /health answered 200); stopped when the block ends. env: variables
    added to this process's; log: a file for its output (named in the error when it does not start)."""
    started = time.monotonic()
    output = open(log, "wb") if log else subprocess.DEVNULL  # noqa: SIM115 (closed below)
    process = subprocess.Popen(
        argv,
        stdout=output,
        stderr=subprocess.STDOUT if log else subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
        start_new_session=True,
    )
    try:
        while True:
            if process.poll() is not None or time.monotonic() - started > timeout_s:
                where = f" (its output: {log})" if log else ""
                raise SystemExit(f"the reference server did not start: {' '.join(argv)}{where}")
            try:
                if httpx.get(url + "/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.02)
        yield process, time.monotonic() - started
    finally:
        # The whole process group: a server with worker processes (vLLM's engine core) leaves none behind.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
        if log:
            output.close()


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
