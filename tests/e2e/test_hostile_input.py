"""Requests no client should send: integers beyond 64 bits, token ids the model does not have, text that is
not valid Unicode. Each gets a 400 in OpenAI shape naming the field, and none stays counted in flight."""

from __future__ import annotations

import httpx
import pytest
from serve_harness import ServeProcess
from server_probes import metrics

from conftest import tiny_config

HUGE = 2**70

BASE = '"model":"tiny","max_tokens":2'
CASES = [
    ("/v1/completions", f'{{{BASE},"prompt":"hi","top_k":{HUGE}}}', "top_k"),
    ("/v1/completions", f'{{{BASE},"prompt":"hi","seed":{HUGE}}}', "seed"),
    ("/v1/completions", f'{{"model":"tiny","prompt":"hi","max_tokens":{HUGE}}}', "max_tokens"),
    ("/v1/completions", f'{{{BASE},"prompt":"hi","stop_token_ids":[{HUGE}]}}', "stop_token_ids"),
    ("/v1/completions", f'{{{BASE},"prompt":[{HUGE}]}}', "prompt"),
    ("/v1/completions", f'{{{BASE},"prompt":[[1, {HUGE}]]}}', "prompt"),
    ("/v1/completions", f'{{{BASE},"prompt":[-1]}}', "prompt"),
    ("/v1/completions", f'{{{BASE},"prompt":"a \\ud800 b"}}', "prompt"),
    ("/v1/chat/completions", '{"model":"tiny","messages":[{"role":"user","content":"\\udfff"}]}', "messages"),
]


@pytest.fixture(scope="module")
def server(tiny_model, tmp_path_factory):
    with ServeProcess(tmp_path_factory.mktemp("hostile"), tiny_config(tiny_model)) as running:
        yield running


@pytest.mark.parametrize(("path", "body", "param"), CASES, ids=[c[2] + str(i) for i, c in enumerate(CASES)])
def test_each_is_a_400_naming_the_field(server, path, body, param):
    response = httpx.post(
        server.url + path, content=body, headers={"content-type": "application/json"}, timeout=30
    )
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error" and error["param"] == param


def test_none_stays_in_flight_and_the_server_still_answers(server):
    for path, body, _ in CASES * 2:
        httpx.post(server.url + path, content=body, headers={"content-type": "application/json"}, timeout=30)
    assert metrics(server)['roleserve_requests_in_flight{role="tokenizer",instance="0"}'] == 0
    body = {"model": "tiny", "prompt": "Hello", "max_tokens": 2}
    assert httpx.post(server.url + "/v1/completions", json=body, timeout=30).status_code == 200
