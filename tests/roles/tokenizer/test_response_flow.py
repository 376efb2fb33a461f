"""The flow both completion endpoints share, through the real app: collected and streamed responses, a
refusal as a 503 status with Retry-After before any byte of a stream, and observability.log_requests.
Real EngineClient over real ZMQ, the bundled tokenizer, a scripted scheduler at the other end."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging

import httpx
import pytest
from scheduler_peer import FrontWithPeer, Tokens
from starlette.requests import ClientDisconnect

from roles.protocol import Overloaded
from roles.tokenizer.app import create_app
from roles.tokenizer.text_tokenizer import load_text_tokenizer

SECRET_PROMPT = "my confidential prompt"
KEY = "sk-test-key-123"


@pytest.fixture(scope="module")
def tokenizer():
    return load_text_tokenizer("smollm2")


def post(front: FrontWithPeer, path: str, body: dict):
    async def send() -> httpx.Response:
        transport = httpx.ASGITransport(app=create_app(front.state))
        headers = {"authorization": f"Bearer {KEY}"}
        async with httpx.AsyncClient(transport=transport, base_url="http://front", headers=headers) as http:
            return await http.post(path, json=body)

    return send()


def serve_one(tokenizer, script, path: str, body: dict, **settings) -> tuple[httpx.Response, FrontWithPeer]:
    async def scenario():
        async with FrontWithPeer(tokenizer, script, api_key=KEY, **settings) as front:
            return await post(front, path, body), front

    return asyncio.run(scenario())


def test_a_collected_completion_and_its_log_line(tokenizer, caplog):
    ids = tokenizer.encode(" Hello world", add_special_tokens=False)
    body = {"model": "smollm2", "prompt": SECRET_PROMPT, "max_tokens": len(ids), "n": 2}
    with caplog.at_level(logging.INFO, logger="roleserve.requests"):
        response, front = serve_one(
            tokenizer, lambda g: Tokens(ids, "length", 3), "/v1/completions", body, log_requests=True
        )
    assert response.status_code == 200, response.text
    answer = response.json()
    assert [c["text"] for c in answer["choices"]] == [" Hello world"] * 2
    num_prompt = len(tokenizer.encode(SECRET_PROMPT))
    assert answer["usage"] == {
        "prompt_tokens": num_prompt,
        "completion_tokens": 2 * len(ids),
        "total_tokens": num_prompt + 2 * len(ids),
        "prompt_tokens_details": {"cached_tokens": 3},  # the prompt's, counted once however many choices
    }
    [line] = [r.getMessage() for r in caplog.records if r.name == "roleserve.requests"]
    assert line.startswith(f"request {answer['id']} POST /v1/completions status=200 ")
    assert (
        f"prompt_tokens={2 * num_prompt} completion_tokens={2 * len(ids)} finish_reason=length,length" in line
    )
    assert "latency_ms=" in line
    assert (
        SECRET_PROMPT not in line and "confidential" not in line and KEY not in line and "Hello" not in line
    )


def test_a_streamed_completion_ends_with_done_and_usage(tokenizer):
    ids = tokenizer.encode(" Hello world", add_special_tokens=False)
    body = {"model": "smollm2", "prompt": "Hi", "stream": True, "stream_options": {"include_usage": True}}
    response, _ = serve_one(tokenizer, lambda g: Tokens(ids, "stop"), "/v1/completions", body)
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
    events = [line[6:] for line in response.text.splitlines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(event) for event in events[:-1]]
    assert "".join(c["choices"][0]["text"] for c in chunks if c["choices"]) == " Hello world"
    assert chunks[-1]["usage"]["completion_tokens"] == len(ids)


@pytest.mark.parametrize("stream", [False, True])
def test_an_overloaded_scheduler_is_a_503_with_retry_after_before_any_byte(tokenizer, caplog, stream):
    body = {"model": "smollm2", "messages": [{"role": "user", "content": "Hi"}], "stream": stream}
    with caplog.at_level(logging.INFO, logger="roleserve.requests"):
        response, front = serve_one(
            tokenizer,
            lambda g: Overloaded(g.request_id, 2.2),
            "/v1/chat/completions",
            body,
            log_requests=True,
        )
    assert response.status_code == 503
    assert response.headers["retry-after"] == "3"  # whole seconds, rounded up
    assert response.headers["content-type"].startswith("application/json")
    assert response.json()["error"]["code"] == "server_overloaded"
    [line] = [r.getMessage() for r in caplog.records if r.name == "roleserve.requests"]
    assert " POST /v1/chat/completions status=503 " in line and line.startswith("request chatcmpl-")
    assert front.state.client.num_in_flight == 0


def test_no_log_line_unless_log_requests_is_on(tokenizer, caplog):
    body = {"model": "smollm2", "prompt": "Hi", "max_tokens": 1}
    with caplog.at_level(logging.INFO, logger="roleserve.requests"):
        response, _ = serve_one(tokenizer, lambda g: Tokens([5], "length"), "/v1/completions", body)
    assert response.status_code == 200
    assert not [r for r in caplog.records if r.name == "roleserve.requests"]


def test_a_stream_whose_client_left_before_the_first_chunk_still_aborts_its_choices(tokenizer):
    body = {"model": "smollm2", "prompt": "Hi", "stream": True, "n": 2}

    async def scenario():
        async with FrontWithPeer(tokenizer, lambda g: Tokens([5, 6], None)) as front:  # never finish
            app = create_app(front.state)
            request = json.dumps(body).encode()
            messages = [{"type": "http.request", "body": request, "more_body": False}]

            async def receive():
                return messages.pop(0) if messages else await asyncio.Event().wait()

            async def send(message):
                if message["type"] == "http.response.start":
                    raise OSError("the client is gone")

            scope = {
                "type": "http",
                "asgi": {"version": "3.0", "spec_version": "2.4"},
                "http_version": "1.1",
                "method": "POST",
                "scheme": "http",
                "path": "/v1/completions",
                "raw_path": b"/v1/completions",
                "query_string": b"",
                "root_path": "",
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"authorization", f"Bearer {KEY}".encode()),
                ],
                "server": ("front", 80),
                "client": ("test", 1),
            }
            with contextlib.suppress(OSError, ClientDisconnect):
                await app(scope, receive, send)
            aborted = await front.wait_for_aborts(2)
            assert sorted(aborted) == sorted(g.request_id for g in front.peer.generates)
            assert front.state.client.num_in_flight == 0

    asyncio.run(scenario())
