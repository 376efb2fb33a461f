"""Admission is the scheduler's: with two tokenizer workers, the scheduler still holds only
schedule.max_running_requests + schedule.max_queued_requests, and the next request is a 503 in the OpenAI
error shape with Retry-After, also when streamed (a status, not an SSE error)."""

from __future__ import annotations

import threading

import httpx
import pytest
from scheduler_load import LONG_CONTEXT, LONG_MAX_TOKENS, wait_for_load, write_long_context_llama
from serve_harness import ServeProcess

from conftest import tiny_config

LONG = {
    "model": "tiny",
    "prompt": "Hello",
    "max_tokens": LONG_MAX_TOKENS,
    "temperature": 0,
    "ignore_eos": True,
}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    model = write_long_context_llama(tmp_path_factory.mktemp("long-context"))
    config = tiny_config(
        model,
        tokenizer={"workers": 2},
        schedule={"max_running_requests": 1, "max_queued_requests": 1},
        memory={"kv_cache_tokens": LONG_CONTEXT},
        launcher={"shutdown_timeout_s": 0},  # the held requests need not drain
    )
    with ServeProcess(tmp_path_factory.mktemp("overload"), config) as running:
        yield running


def hold(url: str) -> None:
    """One long request on its own connection; it ends when the server stops."""
    try:
        httpx.post(url + "/v1/completions", json=LONG, timeout=None)
    except httpx.HTTPError:
        pass


def assert_overloaded(response: httpx.Response) -> None:
    assert response.status_code == 503, response.text
    assert int(response.headers["retry-after"]) >= 1
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()["error"]
    assert error["code"] == "server_overloaded" and error["type"] == "server_error"
    assert "retry later" in error["message"]


def test_the_scheduler_bound_holds_across_tokenizer_workers(server):
    for _ in range(2):
        threading.Thread(target=hold, args=(server.url,), daemon=True).start()
    wait_for_load(server.url, lambda load: load.get(0) == (1, 1), "full scheduler (1 running, 1 waiting)")
    # Each request on a fresh connection: the kernel spreads them over both workers; every one is refused.
    for _ in range(6):
        assert_overloaded(httpx.post(server.url + "/v1/completions", json={**LONG, "max_tokens": 4}))
    chat = {"model": "tiny", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4}
    assert_overloaded(httpx.post(server.url + "/v1/chat/completions", json=chat))
    with httpx.stream(
        "POST", server.url + "/v1/completions", json={**LONG, "max_tokens": 4, "stream": True}
    ) as streamed:
        streamed.read()
        assert_overloaded(streamed)
    n_choices = {**LONG, "max_tokens": 4, "n": 2}  # none of its choices may stay queued
    assert_overloaded(httpx.post(server.url + "/v1/completions", json=n_choices))
    assert wait_for_load(server.url, lambda load: True, "load")[0] == (1, 1)
