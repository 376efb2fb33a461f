"""Requests no client should send: integers beyond 64 bits, token ids the model does not have, text that is
not valid Unicode. Each gets a 400 in OpenAI shape naming the field, and none stays counted in flight."""

from __future__ import annotations

import re

import httpx
import pytest
from serve_harness import ServeProcess
from server_probes import metrics, series

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
    assert metrics(server)[series("roleserve_requests_in_flight", role="tokenizer", instance=0)] == 0
    body = {"model": "tiny", "prompt": "Hello", "max_tokens": 2}
    assert httpx.post(server.url + "/v1/completions", json=body, timeout=30).status_code == 200


def test_a_body_over_http_max_request_bytes_is_a_413_declared_or_chunked(server):
    big = {"model": "tiny", "prompt": "word " * (1 << 20), "max_tokens": 1}  # 5 MiB > the 4 MiB default
    response = httpx.post(server.url + "/v1/completions", json=big, timeout=60)
    assert response.status_code == 413 and response.json()["error"]["code"] == "request_too_large"

    def chunks():  # no Content-Length: the guard counts what it reads
        for _ in range(6):
            yield b" " * (1 << 20)

    chunked = httpx.post(
        server.url + "/v1/completions",
        content=chunks(),
        headers={"content-type": "application/json"},
        timeout=60,
    )
    assert chunked.status_code == 413, chunked.text


def test_request_metrics_are_labelled_by_route_never_by_the_raw_path(server):
    for junk in ('/x"} 1 forged', "/nope/1", "/nope/2"):
        assert httpx.get(server.url + junk, timeout=30).status_code == 404
    httpx.post(server.url + "/admin/expert_distribution/start", timeout=30)
    text = httpx.get(server.url + "/metrics", timeout=30).text
    endpoints = set(re.findall(r'roleserve_requests_total\{[^}]*endpoint="([^"]*)"', text))
    assert "unmatched" in endpoints and "/admin/expert_distribution/{action}" in endpoints
    assert not any("nope" in e or "forged" in e for e in endpoints)
    assert "forged" not in text
