"""The launcher's supervision: readiness, deaths, no orphans, draining shutdown (dp policies: test_dp_policy)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import threading
from pathlib import Path

import httpx
import psutil
from serve_harness import ServeProcess
from server_probes import DEADLINE_S, paused, pid_of, wait_until

from conftest import tiny_config


def ready_pids(server: ServeProcess, name: str) -> set[int]:
    """The pids the launcher logged READY for under this child name (one per start)."""
    return {int(pid) for pid in re.findall(rf"{re.escape(name)} ready \(pid (\d+)\)", server.output)}


def signal_the_scheduler_and_see_everything_stop(server: ServeProcess, signum: signal.Signals) -> int:
    """Send the scheduler a signal; under restart_policy never the server exits 1 and leaves no child behind.

    Returns the scheduler's pid, for the test to look for in the launcher's account of it."""
    scheduler = pid_of(server, "scheduler")
    children = server.children()
    os.kill(scheduler, signum)
    assert server.wait_exit(DEADLINE_S) == 1
    assert "launcher.restart_policy: never" in server.output
    gone, alive = psutil.wait_procs(children, timeout=DEADLINE_S)
    assert alive == [], [p.pid for p in alive]
    return scheduler


def test_killed_scheduler_brings_the_whole_server_down_naming_its_role(tiny_model, tmp_path):
    with ServeProcess(tmp_path, tiny_config(tiny_model)) as server:
        scheduler = signal_the_scheduler_and_see_everything_stop(server, signal.SIGKILL)
        assert f"scheduler[0] (pid {scheduler}) was killed by signal SIGKILL" in server.output
        assert "out-of-memory" in server.output


def test_a_stopped_scheduler_is_found_by_its_missing_heartbeat_and_brings_the_server_down(
    tiny_model, tmp_path
):
    with ServeProcess(tmp_path, tiny_config(tiny_model, launcher={"heartbeat_timeout_s": 2})) as server:
        # Stopped for good (not `paused`): the launcher must kill it, there is nothing to continue afterwards.
        scheduler = signal_the_scheduler_and_see_everything_stop(server, signal.SIGSTOP)
        assert f"scheduler[0] (pid {scheduler}) sent no heartbeat for " in server.output
        assert "(launcher.heartbeat_timeout_s = 2): hung or stopped" in server.output


def health(server: ServeProcess) -> tuple[int, dict]:
    response = httpx.get(server.url + "/health", timeout=5)
    return response.status_code, response.json()


def test_a_late_scheduler_turns_health_503_before_it_is_taken_for_hung(tiny_model, tmp_path):
    config = tiny_config(tiny_model, launcher={"heartbeat_timeout_s": 30, "late_after_s": 1})
    with ServeProcess(tmp_path, config) as server:
        assert health(server) == (200, {"status": "ok"})
        scheduler = pid_of(server, "scheduler")
        with paused(scheduler):
            wait_until(lambda: health(server)[0] == 503, "/health turning 503", server, timeout_s=10)
            assert health(server)[1] == {"status": "unavailable", "unavailable": ["scheduler[0] (late)"]}
            assert "scheduler[0] sent no heartbeat for 1 s (launcher.late_after_s)" in server.output
        wait_until(lambda: health(server)[0] == 200, "/health turning 200 again", server, timeout_s=10)
        assert "scheduler[0] is heard again" in server.output
        assert "hung or stopped" not in server.output  # late is not hung: nothing was restarted or stopped
        client = server.openai_client()
        assert client.completions.create(model="tiny", prompt="Hi", max_tokens=2).usage.completion_tokens == 2


def test_on_failure_restarts_the_scheduler_and_serves_again(tiny_model, tmp_path):
    config = tiny_config(tiny_model, launcher={"restart_policy": "on-failure", "max_restarts": 1})
    with ServeProcess(tmp_path, config) as server:
        killed = pid_of(server, "scheduler")
        os.kill(killed, signal.SIGKILL)
        wait_until(lambda: "restarting it (1/1)" in server.output, "the launcher's restart notice", server)
        wait_until(
            lambda: ready_pids(server, "scheduler[0]") - {killed}, "READY of the new scheduler", server
        )
        client = server.openai_client()
        response = client.completions.create(model="tiny", prompt="Hi", max_tokens=2)
        assert response.usage.completion_tokens == 2
        assert pid_of(server, "scheduler") != killed


def test_sigkill_of_the_launcher_leaves_no_process_behind(tiny_model, tmp_path):
    server = ServeProcess(tmp_path, tiny_config(tiny_model)).start()
    try:
        children = server.children()
        assert len(children) >= 2
        os.kill(server.process.pid, signal.SIGKILL)
        gone, alive = psutil.wait_procs(children, timeout=DEADLINE_S)
        assert alive == [], [p.pid for p in alive]
    finally:
        server.stop()


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
        assert first_token.wait(DEADLINE_S), "the long request never started streaming"
        # The scheduler is paused while the drain is observed, so the request is surely still in flight.
        with paused(pid_of(server, "scheduler")):
            server.process.send_signal(signal.SIGTERM)
            wait_until(
                lambda: httpx.get(server.url + "/health", timeout=5).status_code == 503,
                "/health turning 503 after SIGTERM",
                server,
            )
            refused = httpx.post(
                server.url + "/v1/completions", json={"model": "tiny", "prompt": "x"}, timeout=5
            )
            assert refused.status_code == 503
            assert worker.is_alive() and "finish_reason" not in result
        worker.join(120)
        assert result["finish_reason"] == "length"
        assert result["usage"]["completion_tokens"] == 1900
        assert server.wait_exit(DEADLINE_S) == 0
        assert list(runtime_parent.iterdir()) == []  # the private runtime dir is removed


def model_whose_weights_never_arrive(model, folder: Path) -> Path:
    """The model's files, but its weights file is a FIFO nobody writes: a scheduler opening it waits forever."""
    shutil.copytree(model, folder)
    weights = folder / "model.safetensors"
    weights.unlink()
    os.mkfifo(weights)
    return folder


def test_startup_timeout_names_the_setting_and_missing_roles(tiny_model, tmp_path):
    model = model_whose_weights_never_arrive(tiny_model, tmp_path / "model")
    # With the context length given, the launcher itself never reads the checkpoint (only the scheduler does).
    config = tiny_config(model, model={"context_length": 2048}, launcher={"startup_timeout_s": 5})
    server = ServeProcess(tmp_path, config).start(wait=False)
    try:
        assert server.wait_exit(DEADLINE_S) == 1
        assert "not every role reported READY within launcher.startup_timeout_s=5s" in server.output
        missing = server.output.split("still missing:")[1].splitlines()[0]
        assert "scheduler[0]" in missing, server.output
    finally:
        server.stop()
