"""The launcher's supervision: readiness, deaths, no orphans, draining shutdown, data parallelism."""

from __future__ import annotations

import os
import signal
import threading
import time

import httpx
import openai
import psutil
import pytest
from serve_harness import ServeProcess

from conftest import tiny_config


def pid_of(server: ServeProcess, role: str) -> int:
    processes = httpx.get(server.url + "/roles", timeout=30).json()["processes"]
    return next(p["pid"] for p in processes if p["role"] == role)


def test_killed_scheduler_brings_the_whole_server_down_naming_its_role(tiny_model, tmp_path):
    with ServeProcess(tmp_path, tiny_config(tiny_model)) as server:
        scheduler = pid_of(server, "scheduler")
        children = server.children()
        os.kill(scheduler, signal.SIGKILL)
        assert server.wait_exit(60) == 1
        assert f"scheduler[0] (pid {scheduler}) was killed by signal SIGKILL" in server.output
        assert "out-of-memory" in server.output
        assert "launcher.restart_policy: never" in server.output
        gone, alive = psutil.wait_procs(children, timeout=15)
        assert alive == []


def test_on_failure_restarts_the_scheduler_and_serves_again(tiny_model, tmp_path):
    config = tiny_config(tiny_model, launcher={"restart_policy": "on-failure", "max_restarts": 1})
    with ServeProcess(tmp_path, config) as server:
        os.kill(pid_of(server, "scheduler"), signal.SIGKILL)
        client = openai.OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0, timeout=30)
        deadline = time.monotonic() + 60
        while True:
            try:
                client.completions.create(model="tiny", prompt="Hi", max_tokens=2)
                break
            except openai.APIError:
                assert time.monotonic() < deadline, server.output
                time.sleep(0.5)
        assert "restarting it (1/1)" in server.output


def test_sigkill_of_the_launcher_leaves_no_process_behind(tiny_model, tmp_path):
    server = ServeProcess(tmp_path, tiny_config(tiny_model)).start()
    try:
        children = server.children()
        assert len(children) >= 2
        os.kill(server.process.pid, signal.SIGKILL)
        gone, alive = psutil.wait_procs(children, timeout=20)
        assert alive == [], [p.pid for p in alive]
    finally:
        server.stop()


def test_sigterm_drains_in_flight_requests_then_exits_cleanly(tiny_model, tmp_path):
    runtime_parent = tmp_path / "run"
    config = tiny_config(tiny_model, launcher={"shutdown_timeout_s": 30, "runtime_dir": str(runtime_parent)})
    with ServeProcess(tmp_path, config) as server:
        client = openai.OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0, timeout=60)
        result = {}

        def long_request():
            result["response"] = client.completions.create(
                model="tiny", prompt="Hello", max_tokens=1900, temperature=0, extra_body={"ignore_eos": True}
            )

        worker = threading.Thread(target=long_request)
        worker.start()
        time.sleep(1.0)
        server.process.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        assert httpx.get(server.url + "/health", timeout=5).status_code == 503
        refused = httpx.post(server.url + "/v1/completions", json={"model": "tiny", "prompt": "x"}, timeout=5)
        assert refused.status_code == 503
        worker.join(60)
        assert result["response"].choices[0].finish_reason == "length"
        assert result["response"].usage.completion_tokens == 1900
        assert server.wait_exit(60) == 0
        assert list(runtime_parent.iterdir()) == []  # the private runtime dir is removed


def test_startup_timeout_names_the_setting_and_missing_roles(tiny_model, tmp_path):
    config = tiny_config(tiny_model, launcher={"startup_timeout_s": 1})
    server = ServeProcess(tmp_path, config).start(wait=False)
    try:
        assert server.wait_exit(60) == 1
        assert "launcher.startup_timeout_s=1s" in server.output
        assert "still missing:" in server.output
    finally:
        server.stop()


@pytest.mark.parametrize("policy", ["round_robin", "shortest_queue"])
def test_two_replicas_behind_the_dp_controller(tiny_model, tmp_path, policy):
    config = tiny_config(tiny_model, parallel={"dp_size": 2, "load_balance": policy})
    with ServeProcess(tmp_path, config) as server:
        client = openai.OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0, timeout=60)
        texts = set()
        threads = []

        def ask():
            response = client.completions.create(
                model="tiny",
                prompt="Hello world",
                max_tokens=6,
                temperature=0,
                extra_body={"ignore_eos": True},
            )
            texts.add(response.choices[0].text)

        for _ in range(6):
            threads.append(threading.Thread(target=ask))
            threads[-1].start()
        for thread in threads:
            thread.join(60)
        assert len(texts) == 1  # same weights, greedy: every replica answers alike
        processes = httpx.get(server.url + "/roles", timeout=30).json()["processes"]
        roles = sorted((p["role"], p.get("instance")) for p in processes)
        assert ("dp_controller", 0) in roles and ("scheduler", 1) in roles
        text = httpx.get(server.url + "/metrics").text
        assert 'roleserve_scheduler_running_requests{role="scheduler",instance="1"}' in text
