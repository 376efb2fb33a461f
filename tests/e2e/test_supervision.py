"""The launcher's supervision: readiness, deaths, no orphans, draining shutdown (dp policies: test_dp_policy)."""

from __future__ import annotations

import json
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
from tests.tiny_checkpoint import write_tiny_llama


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


@pytest.fixture(scope="module")
def slow_model(tmp_path_factory):
    """Wide enough that a 1900-token answer takes seconds, so the drain happens while it still runs."""
    return write_tiny_llama(
        tmp_path_factory.mktemp("slow-model"),
        hidden_size=512,
        intermediate_size=1536,
        num_hidden_layers=8,
        num_attention_heads=8,
        num_key_value_heads=4,
    )


def stream_long_request(url: str, first_token: threading.Event, result: dict) -> None:
    body = {
        "model": "tiny",
        "prompt": "Hello",
        "max_tokens": 1900,
        "temperature": 0,
        "ignore_eos": True,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    with httpx.stream("POST", url + "/v1/completions", json=body, timeout=120) as response:
        for line in response.iter_lines():
            if not line.startswith("data: {"):
                continue
            chunk = json.loads(line[6:])
            first_token.set()
            if chunk["choices"] and chunk["choices"][0].get("finish_reason"):
                result["finish_reason"] = chunk["choices"][0]["finish_reason"]
            if chunk.get("usage"):
                result["usage"] = chunk["usage"]


def test_sigterm_drains_in_flight_requests_then_exits_cleanly(slow_model, tmp_path):
    runtime_parent = tmp_path / "run"
    config = tiny_config(slow_model, launcher={"shutdown_timeout_s": 60, "runtime_dir": str(runtime_parent)})
    with ServeProcess(tmp_path, config) as server:
        first_token, result = threading.Event(), {}
        worker = threading.Thread(
            target=stream_long_request, args=(server.url, first_token, result), daemon=True
        )
        worker.start()
        assert first_token.wait(60), "the long request never started streaming"
        server.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 10
        while httpx.get(server.url + "/health", timeout=5).status_code != 503:
            assert time.monotonic() < deadline, "/health did not turn 503 after SIGTERM"
            time.sleep(0.01)
        refused = httpx.post(server.url + "/v1/completions", json={"model": "tiny", "prompt": "x"}, timeout=5)
        assert refused.status_code == 503
        assert worker.is_alive(), "the request ended before the drain could be observed"
        worker.join(120)
        assert result["finish_reason"] == "length"
        assert result["usage"]["completion_tokens"] == 1900
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
