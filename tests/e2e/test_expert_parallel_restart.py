"""A killed expert-parallel rank under restart_policy on-failure: the launcher restarts it, it takes its
experts from the expert_backup and rejoins the other rank, which kept its own requests; the requests the
dead rank held end with a clear error, and the server answers as before."""

from __future__ import annotations

import os
import signal
from concurrent.futures import ThreadPoolExecutor

import httpx
from serve_harness import ServeProcess
from server_probes import metrics, pid_of, series, wait_until

from conftest import tiny_config
from tests.moe_checkpoint import write_tiny_mixtral


def complete(server: ServeProcess, prompt: str, max_tokens: int) -> httpx.Response:
    body = {"model": "tiny", "prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "ignore_eos": True}
    return httpx.post(server.url + "/v1/completions", json=body, timeout=120)


def running_on_each_rank(server: ServeProcess) -> list[int]:
    samples = metrics(server)
    return [
        int(samples.get(series("roleserve_scheduler_running_requests", role="scheduler", instance=rank), 0))
        for rank in (0, 1)
    ]


def test_a_killed_rank_comes_back_from_the_backup_and_the_other_keeps_its_requests(tmp_path):
    model = write_tiny_mixtral(tmp_path / "mixtral")
    config = tiny_config(
        model,
        parallel={"ep_size": 2, "load_balance": "round_robin"},
        expert_backup={"enabled": True},
        launcher={"restart_policy": "on-failure", "max_restarts": 1},
    )
    with ServeProcess(tmp_path / "serve", config) as server:
        expected = complete(server, "Hello there", 6).json()["choices"][0]["text"]
        rank1 = pid_of(server, "scheduler", 1)
        with ThreadPoolExecutor(2) as pool:
            # Round robin after one request: one of these runs on each rank. Long ones, so both are in
            # flight when rank 1 dies.
            futures = [pool.submit(complete, server, prompt, 400) for prompt in ("A long story", "Another")]
            wait_until(lambda: running_on_each_rank(server) == [1, 1], "both requests running", server)
            os.kill(rank1, signal.SIGKILL)
            responses = sorted((f.result(timeout=300) for f in futures), key=lambda r: r.status_code)
        kept, lost = responses
        assert lost.status_code == 503 and "scheduler[1] restarted" in lost.text, lost.text
        assert lost.json()["error"]["code"] == "scheduler_restarted"
        assert kept.status_code == 200 and kept.json()["usage"]["completion_tokens"] == 400
        assert "restarting it (1/1)" in server.output
        assert server.output.count("mapped from roleserve-eb-") == 3  # both ranks, then the restarted one
        assert "expert-parallel group formed again" in server.output
        for _ in range(2):  # both ranks serve again, with the greedy answer of before
            assert complete(server, "Hello there", 6).json()["choices"][0]["text"] == expected
