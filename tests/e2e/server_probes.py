"""Watch a running server without timing it: poll a condition under one generous deadline, read its metrics
and its processes, pause one of them so what it computes cannot finish while the test looks."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
from prometheus_client.parser import text_string_to_metric_families
from serve_harness import ServeProcess

DEADLINE_S = 60


def wait_until(condition, what: str, server: ServeProcess, timeout_s: float = DEADLINE_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not within {timeout_s:g} s\n{server.output}"
        time.sleep(0.02)


def series(name: str, **labels) -> str:
    """How `metrics` names one sample: its name, then its labels sorted by name."""
    return name + "{" + ",".join(f'{key}="{value}"' for key, value in sorted(labels.items())) + "}"


def metrics(server: ServeProcess) -> dict[str, float]:
    """One /metrics snapshot, parsed by prometheus_client: series(name, **labels) -> value."""
    text = httpx.get(server.url + "/metrics", timeout=30).text
    return {
        series(sample.name, **sample.labels): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def pid_of(server: ServeProcess, role: str, instance: int | None = None) -> int:
    """The pid of the role's process (of that instance, when given)."""
    processes = httpx.get(server.url + "/roles", timeout=30).json()["processes"]
    return next(p["pid"] for p in processes if p["role"] == role and instance in (None, p["instance"]))


def greedy_texts_at_once(server: ServeProcess, prompts: list[str], max_tokens: int) -> list[str]:
    """Every prompt sent at once (so each replica has requests in the same passes); the greedy texts, in
    prompt order. Each must succeed."""

    def complete(prompt: str) -> str:
        body = {"model": "tiny", "prompt": prompt, "max_tokens": max_tokens, "temperature": 0}
        response = httpx.post(server.url + "/v1/completions", json=body, timeout=120)
        assert response.status_code == 200, response.text
        return response.json()["choices"][0]["text"]

    with ThreadPoolExecutor(len(prompts)) as pool:
        return list(pool.map(complete, prompts))


@contextlib.contextmanager
def paused(pid: int):
    """SIGSTOP a process for the block: whatever it was computing cannot finish meanwhile."""
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)
