"""A client that goes away aborts its request in the scheduler at once (streamed or not).

Counted in requests, not seconds. A witness request starts first and streams; the leaving request starts
later with as many tokens to generate, so had it run on it would end after the witness. Once the tokenizer
has let go of the leaving request, a load of one request running while one (the witness) is still in flight
proves the scheduler dropped the leaving one long before it could have finished: had it run on, the
scheduler would run two until the witness ended, and one only when none is in flight.
"""

from __future__ import annotations

import json
import socket
import threading

import httpx
import pytest
from serve_harness import ServeProcess
from server_probes import DEADLINE_S, metrics, paused, pid_of, series, wait_until

from conftest import tiny_config

WITNESS = {"model": "tiny", "prompt": "Hello", "max_tokens": 1900, "temperature": 0, "ignore_eos": True}
LEAVING = {**WITNESS, "prompt": "Hello there"}


@pytest.fixture(scope="module")
def server(slow_model, tmp_path_factory):
    with ServeProcess(tmp_path_factory.mktemp("abort"), tiny_config(slow_model)) as running:
        yield running


@pytest.fixture(scope="module")
def scheduler(server) -> int:
    return pid_of(server, "scheduler")


def load(server: ServeProcess) -> dict[str, float]:
    now = metrics(server)
    return {
        "running": now.get(series("roleserve_scheduler_running_requests", role="scheduler", instance=0), 0),
        "waiting": now.get(series("roleserve_scheduler_waiting_requests", role="scheduler", instance=0), 0),
        "in_flight": now.get(series("roleserve_requests_in_flight", role="tokenizer", instance=0), 0),
    }


class Witness(threading.Thread):
    """The witness request, streamed until `stop` is set (leaving aborts it too)."""

    def __init__(self, server: ServeProcess):
        super().__init__(name="witness", daemon=True)
        self.url = server.url
        self.first_token, self.stop = threading.Event(), threading.Event()

    def run(self) -> None:
        body = {**WITNESS, "stream": True}
        with httpx.stream("POST", self.url + "/v1/completions", json=body, timeout=120) as response:
            for line in response.iter_lines():
                if line.startswith("data: {"):
                    self.first_token.set()
                if self.stop.is_set():
                    return


@pytest.fixture
def witness(server):
    wait_until(lambda: load(server)["in_flight"] == 0, "an idle server", server)
    started = Witness(server)
    started.start()
    assert started.first_token.wait(DEADLINE_S), "the witness request never started streaming"
    yield started
    started.stop.set()
    started.join(DEADLINE_S)
    wait_until(lambda: load(server) == {"running": 0, "waiting": 0, "in_flight": 0}, "an idle server", server)


def leave(server: ServeProcess, scheduler: int, close) -> None:
    """Close the leaving client's connection with the scheduler paused until the tokenizer has let go of the
    request: whatever the scheduler does next, the witness still has nearly all its tokens to go."""
    with paused(scheduler):
        close()
        wait_until(lambda: load(server)["in_flight"] == 1, "the tokenizer letting go of the request", server)


def assert_aborted_while_the_witness_runs(server: ServeProcess, witness: Witness) -> None:
    def witness_runs_alone() -> bool:
        now = load(server)
        if now == {"running": 1, "waiting": 0, "in_flight": 1}:
            return True
        assert witness.is_alive(), f"the witness ended first: the request that left ran on ({now})"
        return False

    wait_until(witness_runs_alone, "the scheduler running the witness alone", server)


def test_streaming_disconnect_aborts(server, scheduler, witness):
    with httpx.stream(
        "POST", server.url + "/v1/completions", json={**LEAVING, "stream": True}, timeout=60
    ) as response:
        lines = response.iter_lines()
        received = [next(lines) for _ in range(6)]
        assert any(line.startswith("data: ") for line in received)  # it runs in the scheduler
        leave(server, scheduler, response.close)
    assert_aborted_while_the_witness_runs(server, witness)


def test_non_streaming_disconnect_aborts(server, scheduler, witness):
    body = json.dumps(LEAVING).encode()
    head = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    head += f"Content-Length: {len(body)}\r\n\r\n"
    with socket.create_connection(("127.0.0.1", server.port)) as client:
        client.sendall(head.encode() + body)
        wait_until(lambda: load(server)["running"] == 2, "both requests running", server)
        leave(server, scheduler, client.close)
    assert_aborted_while_the_witness_runs(server, witness)
