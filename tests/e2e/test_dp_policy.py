"""Two scheduler replicas behind the dp_controller: each policy places requests where it must.

Requests are held open (long streams on a tiny model), so where each one runs is read from the replicas'
load on /metrics. Four requests go 0, 1, 0, 1 under both policies; the two on replica 1 are then closed,
and two more go 0, 1 under round_robin (it keeps cycling) but 1, 1 under shortest_queue (replica 1 owns
none). The dp_controller forgets a request when it forwards its Abort, so once replica 1 shows no load
the controller already knows: nothing here depends on timing."""

from __future__ import annotations

import contextlib

import httpx
import pytest
from scheduler_load import (
    LONG_CONTEXT,
    LONG_MAX_TOKENS,
    num_unfinished,
    wait_for_load,
    write_long_context_llama,
)
from serve_harness import ServeProcess

from conftest import tiny_config

LONG = {
    "model": "tiny",
    "prompt": "Hello world",
    "max_tokens": LONG_MAX_TOKENS,
    "temperature": 0,
    "ignore_eos": True,
    "stream": True,
}


@pytest.fixture(scope="module")
def long_model(tmp_path_factory):
    return write_long_context_llama(tmp_path_factory.mktemp("long-context"))


def unfinished_by_replica(load: dict[int, tuple[int, int]]) -> list[int]:
    return [sum(load.get(instance, (0, 0))) for instance in (0, 1)]


@pytest.mark.parametrize(
    ("policy", "after_refill"),
    [("round_robin", [3, 1]), ("shortest_queue", [2, 2])],
)
def test_each_policy_places_requests_as_it_must(long_model, tmp_path, policy, after_refill):
    config = tiny_config(
        long_model,
        parallel={"dp_size": 2, "load_balance": policy},
        memory={"kv_cache_tokens": LONG_CONTEXT},
        launcher={"shutdown_timeout_s": 0},
    )
    with ServeProcess(tmp_path, config) as server, contextlib.ExitStack() as streams, httpx.Client() as http:

        def start_long_request() -> httpx.Response:
            """Open one long stream; it returns once the request runs (the first token came)."""
            total = num_unfinished(wait_for_load(server.url, lambda load: True, "load"))
            response = streams.enter_context(
                http.stream("POST", server.url + "/v1/completions", json=LONG, timeout=60)
            )
            assert response.status_code == 200
            wait_for_load(
                server.url, lambda load: num_unfinished(load) == total + 1, "new request in the load"
            )
            return response

        held = []
        for expected in ([1, 0], [1, 1], [2, 1], [2, 2]):
            held.append(start_long_request())
            assert unfinished_by_replica(wait_for_load(server.url, lambda load: True, "load")) == expected
        for response in held[1::2]:  # the two on replica 1
            response.close()
        wait_for_load(server.url, lambda load: unfinished_by_replica(load) == [2, 0], "replica 1 emptied")
        for _ in range(2):
            start_long_request()
        assert unfinished_by_replica(wait_for_load(server.url, lambda load: True, "load")) == after_refill

        # Whichever replica answers, the same weights give the same greedy text.
        client = server.openai_client()
        texts = {
            client.completions.create(
                model="tiny", prompt="Hi", max_tokens=4, temperature=0, extra_body={"ignore_eos": True}
            )
            .choices[0]
            .text
            for _ in range(2)
        }
        assert len(texts) == 1
