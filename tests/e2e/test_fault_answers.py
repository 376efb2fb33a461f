"""A scheduler that dies (SIGKILL) or hangs (SIGSTOP) with blocking and streamed requests in flight: every
client is answered (a 503 server_error naming the role; a stream, a final error event and [DONE]), new
requests are refused with a 503 and never hang, the server exits, and no traceback lands in the log."""

from __future__ import annotations

import json
import os
import signal
import threading

import httpx
from scheduler_load import num_unfinished, wait_for_load
from serve_harness import ServeProcess
from server_probes import DEADLINE_S, pid_of, wait_until

from conftest import tiny_config

LONG = {"model": "tiny", "prompt": "Hello", "max_tokens": 1900, "ignore_eos": True}


def blocking(url: str, outcome: dict) -> None:
    response = httpx.post(url + "/v1/completions", json=LONG, timeout=120)
    outcome.update(status=response.status_code, body=response.json())


def streaming(url: str, outcome: dict, started: threading.Event) -> None:
    events: list[str] = []
    with httpx.stream(
        "POST", url + "/v1/completions", json={**LONG, "stream": True}, timeout=120
    ) as response:
        outcome["status"] = response.status_code
        for line in response.iter_lines():
            if line.startswith("data: "):
                events.append(line[6:])
                started.set()
    outcome["last_events"] = events[-2:]


def start_requests(server: ServeProcess) -> tuple[list[threading.Thread], list[dict]]:
    """Two blocking and two streamed requests, all running in the scheduler when this returns."""
    outcomes = [{} for _ in range(4)]
    started = [threading.Event(), threading.Event()]
    workers = [threading.Thread(target=blocking, args=(server.url, outcomes[i]), daemon=True) for i in (0, 1)]
    workers += [
        threading.Thread(target=streaming, args=(server.url, outcomes[2 + i], started[i]), daemon=True)
        for i in (0, 1)
    ]
    for worker in workers:
        worker.start()
    for event in started:
        assert event.wait(DEADLINE_S), server.output
    wait_for_load(server.url, lambda load: num_unfinished(load) == 4, "4 requests running")
    return workers, outcomes


def assert_answered_naming_the_scheduler(workers: list[threading.Thread], outcomes: list[dict]) -> None:
    for worker in workers:
        worker.join(DEADLINE_S)
        assert not worker.is_alive(), "a client was never answered"
    for outcome in outcomes[:2]:
        assert outcome["status"] == 503, outcome
        error = outcome["body"]["error"]
        assert error["type"] == "server_error" and error["code"] == "role_failed", error
        assert "scheduler[0]" in error["message"], error
    for outcome in outcomes[2:]:
        assert outcome["status"] == 200  # the stream had begun: it ends with an error event, then [DONE]
        error_event, done = outcome["last_events"]
        assert done == "[DONE]", outcome
        error = json.loads(error_event)["error"]
        assert error["type"] == "server_error" and "scheduler[0]" in error["message"], error


def new_request_status(server: ServeProcess) -> int | None:
    """A new short request's status; None when the server is gone (connection refused). Never hangs: a
    request left waiting fails the test at its timeout."""
    try:
        body = {"model": "tiny", "prompt": "Hi", "max_tokens": 1}
        return httpx.post(server.url + "/v1/completions", json=body, timeout=DEADLINE_S).status_code
    except httpx.ConnectError:
        return None


def test_a_killed_scheduler_answers_every_request_in_flight_and_the_server_exits(slow_model, tmp_path):
    with ServeProcess(tmp_path, tiny_config(slow_model)) as server:
        workers, outcomes = start_requests(server)
        os.kill(pid_of(server, "scheduler"), signal.SIGKILL)
        assert new_request_status(server) in (503, None)  # refused from the moment the death is seen
        assert_answered_naming_the_scheduler(workers, outcomes)
        assert server.wait_exit(DEADLINE_S) == 1
        assert new_request_status(server) is None
        assert "Traceback" not in server.output, server.output


def test_a_stopped_scheduler_refuses_new_work_then_answers_every_request_in_flight(slow_model, tmp_path):
    config = tiny_config(slow_model, launcher={"heartbeat_timeout_s": 6, "late_after_s": 1})
    with ServeProcess(tmp_path, config) as server:
        workers, outcomes = start_requests(server)
        scheduler = pid_of(server, "scheduler")
        os.kill(scheduler, signal.SIGSTOP)
        try:
            wait_until(
                lambda: httpx.get(server.url + "/health", timeout=5).status_code == 503, "/health 503", server
            )
            refused = httpx.post(
                server.url + "/v1/completions", json={"model": "tiny", "prompt": "x"}, timeout=30
            )
            # Late, not yet hung: new work is refused (it would wait on a process that does not run).
            assert refused.status_code == 503, refused.text
            error = refused.json()["error"]
            assert error["code"] in ("role_unavailable", "server_shutting_down")
            assert "scheduler[0]" in error["message"], error
            assert_answered_naming_the_scheduler(workers, outcomes)
            assert server.wait_exit(DEADLINE_S) == 1
        finally:
            try:
                os.kill(scheduler, signal.SIGCONT)
            except ProcessLookupError:
                pass
        assert "(launcher.heartbeat_timeout_s = 6): hung or stopped" in server.output
        assert "Traceback" not in server.output, server.output
