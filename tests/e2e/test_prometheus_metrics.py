"""/metrics through the real server with two tokenizer workers on one port: whichever worker a scrape
reaches, it shows both workers' requests, histograms and in-flight gauges, and the scheduler's load once."""

from __future__ import annotations

import json

import httpx
import pytest
from prometheus_client import CONTENT_TYPE_LATEST
from serve_harness import ServeProcess
from server_probes import metrics, series, wait_until

from conftest import tiny_config

NUM_REQUESTS = 8
MAX_TOKENS = 4
PROMPT = "The quick brown fox jumps over the lazy dog. " * 6  # several pages: the prefix cache holds some


@pytest.fixture(scope="module")
def server(tiny_model, tmp_path_factory):
    config = tiny_config(tiny_model, tokenizer={"workers": 2})
    with ServeProcess(tmp_path_factory.mktemp("metrics"), config) as running:
        yield running


def complete(server: ServeProcess, stream: bool) -> dict:
    """One completion on a connection of its own (the kernel picks the worker); its usage."""
    body = {"model": "tiny", "prompt": PROMPT, "max_tokens": MAX_TOKENS, "ignore_eos": True, "stream": stream}
    if stream:
        body["stream_options"] = {"include_usage": True}
    response = httpx.post(server.url + "/v1/completions", json=body, timeout=120)
    assert response.status_code == 200, response.text
    if not stream:
        return response.json()["usage"]
    events = [line[6:] for line in response.text.splitlines() if line.startswith("data: ")]
    return json.loads(events[-2])["usage"]  # the usage chunk, before [DONE]


def test_one_scrape_shows_every_worker_and_the_scheduler_once(server):
    usages = [complete(server, stream=i % 2 == 1) for i in range(NUM_REQUESTS)]
    front, scheduler = {"role": "tokenizer"}, {"role": "scheduler", "instance": 0}
    idle = series("roleserve_scheduler_running_requests", **scheduler)
    wait_until(lambda: metrics(server)[idle] == 0, "the scheduler reporting itself idle", server)
    for _ in range(4):  # each scrape reaches either worker
        samples = metrics(server)
        ok = series("roleserve_requests_total", **front, endpoint="/v1/completions", status="200")
        assert samples[ok] == NUM_REQUESTS
        assert samples[series("roleserve_time_to_first_token_seconds_count", **front)] == NUM_REQUESTS
        assert samples[series("roleserve_inter_token_latency_seconds_count", **front)] == NUM_REQUESTS * (
            MAX_TOKENS - 1
        )
        e2e = series("roleserve_e2e_request_latency_seconds_count", **front, endpoint="completions")
        assert samples[e2e] == NUM_REQUESTS
        queued = series("roleserve_request_queue_time_seconds_count", role="scheduler")
        assert samples[queued] == NUM_REQUESTS
        assert samples[series("roleserve_generation_tokens_total", **front)] == NUM_REQUESTS * MAX_TOKENS
        num_prompt = sum(u["prompt_tokens"] for u in usages)
        num_cached = sum(u["prompt_tokens_details"]["cached_tokens"] for u in usages)
        assert samples[series("roleserve_prompt_tokens_total", **front)] == num_prompt
        assert num_cached > 0
        hit_ratio = samples[series("roleserve_prefix_cache_hit_ratio", **scheduler)]
        assert hit_ratio == pytest.approx(num_cached / num_prompt)
        assert samples[series("roleserve_scheduler_waiting_requests", **scheduler)] == 0
        assert 0 <= samples[series("roleserve_kv_cache_usage_ratio", **scheduler)] <= 1
        assert samples[series("roleserve_scheduler_dropped_frames_total", **scheduler)] == 0
        for instance in (0, 1):  # both workers' own gauges, in one scrape
            assert samples[series("roleserve_requests_in_flight", **front, instance=instance)] == 0
            assert samples[series("roleserve_embeddings_in_flight", **front, instance=instance)] == 0


def test_the_scrape_is_in_the_librarys_content_type(server):
    response = httpx.get(server.url + "/metrics", timeout=30)
    assert response.headers["content-type"] == CONTENT_TYPE_LATEST
