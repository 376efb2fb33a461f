"""What end-to-end tests read of the schedulers: their load as a tokenizer shows it on /metrics, and a
tiny model whose requests can run for minutes (to hold a scheduler busy while a test looks at it)."""

from __future__ import annotations

import time

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.tiny_checkpoint import write_tiny_llama

# With memory.kv_cache_tokens this large, a request asking for most of it decodes for minutes on the tiny model.
LONG_CONTEXT = 65536
LONG_MAX_TOKENS = 60000

_FIELDS = {"roleserve_scheduler_running_requests": 0, "roleserve_scheduler_waiting_requests": 1}  # -> index


def write_long_context_llama(path):
    return write_tiny_llama(path, max_position_embeddings=LONG_CONTEXT)


def scheduler_load(url: str) -> dict[int, tuple[int, int]]:
    """Scheduler instance -> (running, waiting), from the latest LoadReports a tokenizer received."""
    load: dict[int, list[int]] = {}
    for family in text_string_to_metric_families(httpx.get(url + "/metrics", timeout=30).text):
        for sample in family.samples if family.name in _FIELDS else ():
            instance = int(sample.labels["instance"])
            load.setdefault(instance, [0, 0])[_FIELDS[family.name]] = int(sample.value)
    return {instance: (running, waiting) for instance, (running, waiting) in load.items()}


def wait_for_load(url: str, is_reached, what: str, timeout_s: float = 60) -> dict[int, tuple[int, int]]:
    """Poll /metrics until ``is_reached(load)``; fail naming ``what`` and the last load seen."""
    deadline = time.monotonic() + timeout_s
    while True:
        load = scheduler_load(url)
        if is_reached(load):
            return load
        assert time.monotonic() < deadline, f"no {what} within {timeout_s}s; last load {load}"
        time.sleep(0.02)


def num_unfinished(load: dict[int, tuple[int, int]]) -> int:
    return sum(running + waiting for running, waiting in load.values())
