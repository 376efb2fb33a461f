"""Liveness that measures liveness: a scheduler whose steps take longer than launcher.late_after_s (and than
launcher.heartbeat_timeout_s) is busy, not hung: /health stays 200 under load at concurrency 64 and nothing
is killed. Readiness is the separate answer that says "at capacity"."""

from __future__ import annotations

import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
from scheduler_load import num_unfinished, wait_for_load
from serve_harness import ServeProcess
from server_probes import DEADLINE_S, wait_until

from conftest import tiny_config

NUM_REQUESTS = 64


class HealthPoller(threading.Thread):
    """/health polled until stopped: the statuses it answered, in order."""

    def __init__(self, url: str):
        super().__init__(daemon=True)
        self.url = url
        self.statuses: list[int] = []
        self.is_polling = True

    def run(self) -> None:
        with httpx.Client(timeout=DEADLINE_S) as client:
            while self.is_polling:
                self.statuses.append(client.get(self.url + "/health").status_code)
                time.sleep(0.02)

    def stop(self) -> list[int]:
        self.is_polling = False
        self.join(DEADLINE_S)
        return self.statuses


def test_health_stays_200_at_concurrency_64_while_each_step_outlasts_the_heartbeat_timeout(
    slow_model, tmp_path
):
    # One prefill step takes the prompts of all 64 requests at once (8192 tokens of the wide model): seconds,
    # longer than the 1 s after which a silent scheduler is late and the 2 s after which it is hung.
    config = tiny_config(
        slow_model,
        memory={"kv_cache_tokens": 16384, "page_size": 16},
        schedule={"max_running_requests": NUM_REQUESTS, "chunked_prefill_size": 8192},
        launcher={"late_after_s": 1, "heartbeat_timeout_s": 2},
    )
    rng = random.Random(0)
    prompts = [[rng.randrange(3, 250) for _ in range(128)] for _ in range(NUM_REQUESTS)]
    with ServeProcess(tmp_path, config) as server:
        poller = HealthPoller(server.url)
        poller.start()

        def complete(prompt: list[int]) -> int:
            body = {"model": "tiny", "prompt": prompt, "max_tokens": 4, "ignore_eos": True}
            return httpx.post(server.url + "/v1/completions", json=body, timeout=600).status_code

        with ThreadPoolExecutor(NUM_REQUESTS) as pool:
            statuses = list(pool.map(complete, prompts))
        health = poller.stop()
        assert statuses == [200] * NUM_REQUESTS
        assert health and set(health) == {200}, {status: health.count(status) for status in set(health)}
        assert "(late)" not in server.output and "sent no heartbeat" not in server.output, server.output
        assert "hung or stopped" not in server.output and "stuck" not in server.output


def test_ready_says_at_capacity_while_health_stays_ok(slow_model, tmp_path):
    config = tiny_config(slow_model, schedule={"max_running_requests": 1, "max_queued_requests": 0})
    with ServeProcess(tmp_path, config) as server:
        assert httpx.get(server.url + "/ready", timeout=5).json() == {"status": "ready"}
        body = {"model": "tiny", "prompt": "Hello", "max_tokens": 400, "ignore_eos": True}
        worker = threading.Thread(
            target=lambda: httpx.post(server.url + "/v1/completions", json=body, timeout=120), daemon=True
        )
        worker.start()
        wait_for_load(server.url, lambda load: num_unfinished(load) == 1, "the long request running")
        wait_until(
            lambda: httpx.get(server.url + "/ready", timeout=5).status_code == 503,
            "/ready turning 503",
            server,
        )
        assert httpx.get(server.url + "/ready", timeout=5).json() == {"status": "at capacity"}
        assert httpx.get(server.url + "/health", timeout=5).json() == {"status": "ok"}
        refused = httpx.post(server.url + "/v1/completions", json={**body, "max_tokens": 1}, timeout=30)
        assert refused.status_code == 503 and refused.json()["error"]["code"] == "server_overloaded"
        worker.join(120)
        wait_until(
            lambda: httpx.get(server.url + "/ready", timeout=5).status_code == 200,
            "/ready turning 200",
            server,
        )
