"""A client that goes away aborts its request in the scheduler at once (streamed or not)."""

from __future__ import annotations

import re
import time

import httpx
import pytest
from serve_harness import ServeProcess

from conftest import tiny_config

LONG = {"model": "tiny", "prompt": "Hello", "max_tokens": 1900, "temperature": 0, "ignore_eos": True}


@pytest.fixture(scope="module")
def server(tiny_model, tmp_path_factory):
    with ServeProcess(tmp_path_factory.mktemp("abort"), tiny_config(tiny_model)) as running:
        yield running


@pytest.fixture(scope="module")
def full_request_s(server) -> float:
    """How long the long request takes when nobody leaves: an abort must free the scheduler far sooner."""
    started = time.monotonic()
    response = httpx.post(server.url + "/v1/completions", json=LONG, timeout=120)
    assert response.json()["usage"]["completion_tokens"] == 1900
    return time.monotonic() - started


def metric(server: ServeProcess, name: str) -> float:
    text = httpx.get(server.url + "/metrics").text
    match = re.search(rf"^{re.escape(name)} (\S+)$", text, re.MULTILINE)
    return float(match.group(1)) if match else 0.0


def wait_until_idle(server: ServeProcess, timeout_s: float = 5) -> float:
    started = time.monotonic()
    running = 'roleserve_scheduler_running_requests{role="scheduler",instance="0"}'
    while time.monotonic() - started < timeout_s:
        if (
            metric(server, running) == 0
            and metric(server, 'roleserve_requests_in_flight{role="tokenizer",instance="0"}') == 0
        ):
            return time.monotonic() - started
        time.sleep(0.01)
    raise AssertionError("the scheduler still runs the request after the client left")


def test_streaming_disconnect_aborts(server, full_request_s):
    with httpx.stream(
        "POST", server.url + "/v1/completions", json={**LONG, "stream": True}, timeout=60
    ) as response:
        lines = response.iter_lines()
        received = [next(lines) for _ in range(6)]
        assert any(line.startswith("data: ") for line in received)
    left_at = time.monotonic()
    wait_until_idle(server)
    assert time.monotonic() - left_at < full_request_s / 2


def test_non_streaming_disconnect_aborts(server, full_request_s):
    # The client leaves after an eighth of what the whole request takes, whatever the engine's speed.
    started = time.monotonic()
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(
            server.url + "/v1/completions", json=LONG, timeout=httpx.Timeout(60, read=full_request_s / 8)
        )
    wait_until_idle(server)
    assert time.monotonic() - started < full_request_s / 2
