"""GET /metrics through the real app: behind the API key, in the library's content type, and what the
response flow recorded (queue time, time to first token, inter-token latency, end-to-end latency)."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from prometheus_client import CONTENT_TYPE_LATEST
from scheduler_peer import FrontWithPeer, Tokens
from test_metrics import samples, value

from roles.tokenizer.app import create_app
from roles.tokenizer.text_tokenizer import load_text_tokenizer

KEY = "sk-metrics-key"


@pytest.fixture(scope="module")
def tokenizer():
    return load_text_tokenizer("smollm2")


def scrape_after_two_completions(tokenizer) -> tuple[httpx.Response, httpx.Response]:
    """A scrape without the key, then two completions (3 tokens per choice: one collected with n=2, one
    streamed) and a scrape with the key."""
    body = {"model": "smollm2", "prompt": "Hello", "max_tokens": 3}

    async def scenario():
        async with FrontWithPeer(
            tokenizer, lambda generate: Tokens([5, 6, 7], "length"), api_key=KEY
        ) as front:
            transport = httpx.ASGITransport(app=create_app(front.state))
            async with httpx.AsyncClient(transport=transport, base_url="http://front") as http:
                anonymous = await http.get("/metrics")
                http.headers["authorization"] = f"Bearer {KEY}"
                for extra in ({"n": 2}, {"stream": True}):
                    response = await http.post("/v1/completions", json={**body, **extra})
                    assert response.status_code == 200, response.text
                return anonymous, await http.get("/metrics")

    return asyncio.run(scenario())


def test_metrics_are_behind_the_api_key_and_count_what_the_flow_saw(tokenizer):
    anonymous, scrape = scrape_after_two_completions(tokenizer)
    assert anonymous.status_code == 401
    assert scrape.status_code == 200 and scrape.headers["content-type"] == CONTENT_TYPE_LATEST
    scraped = samples(scrape.content)
    front, scheduler = {"role": "tokenizer"}, {"role": "scheduler"}
    assert value(scraped, "roleserve_requests_total", **front, endpoint="/metrics", status="401") == 1
    assert value(scraped, "roleserve_requests_total", **front, endpoint="/v1/completions", status="200") == 2
    assert value(scraped, "roleserve_request_queue_time_seconds_count", **scheduler) == 3  # one per choice
    assert value(scraped, "roleserve_request_queue_time_seconds_sum", **scheduler) == pytest.approx(0.75)
    assert value(scraped, "roleserve_time_to_first_token_seconds_count", **front) == 2  # one per request
    assert value(scraped, "roleserve_inter_token_latency_seconds_count", **front) == 6  # 2 gaps per choice
    assert value(scraped, "roleserve_e2e_request_latency_seconds_count", **front, endpoint="completions") == 2
    assert value(scraped, "roleserve_generation_tokens_total", **front) == 9
    assert value(scraped, "roleserve_requests_in_flight", **front, instance=0) == 0
    assert value(scraped, "roleserve_scheduler_running_requests", **scheduler, instance=0) is not None
