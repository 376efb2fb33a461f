"""Whatever fails after a request is admitted releases its slot: a fault is injected at each step of a
completion's life (encode, send, the scheduler's first answer, detokenizing, metrics, writing the stream) and
afterwards nothing is counted in flight in the front, every request the scheduler received was aborted there,
and the client got an error in OpenAI shape (a 500 status, or a stream's error event once its 200 was sent).
Real app, real EngineClient over real ZMQ, the bundled tokenizer, a scripted scheduler at the other end."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from scheduler_peer import FrontWithPeer, Tokens

from roles.tokenizer.app import create_app
from roles.tokenizer.text_tokenizer import load_text_tokenizer


class Injected(RuntimeError):
    pass


def fail_on_call(number: int, real=None):
    """A stand-in that fails on its `number`-th call (1-based) and otherwise does what `real` does."""
    calls = [0]

    def stand_in(*args, **kwargs):
        calls[0] += 1
        if calls[0] == number:
            raise Injected(f"injected fault (call {number})")
        return real(*args, **kwargs) if real is not None else None

    return stand_in


def _inject(step: str, front: FrontWithPeer, monkeypatch) -> None:
    """Patch the step's function on the live objects so that it fails."""
    client, metrics = front.state.client, front.state.metrics
    if step == "encode the request":
        import roles.tokenizer.engine_client as module

        monkeypatch.setattr(module, "encode", fail_on_call(1))
    elif step == "send to the scheduler":

        async def broken_send(*args, **kwargs):
            raise Injected("injected fault in send")

        monkeypatch.setattr(client.requests, "send", broken_send)
    elif step == "read the first answer":
        import roles.tokenizer.generation as module

        monkeypatch.setattr(module, "refused", fail_on_call(1, module.refused))
    elif step == "detokenize a later token":
        from roles.tokenizer.detokenizer import IncrementalDetokenizer

        monkeypatch.setattr(IncrementalDetokenizer, "push", fail_on_call(2, IncrementalDetokenizer.push))
    elif step == "count the first token":
        monkeypatch.setattr(metrics.ttft, "observe", fail_on_call(1, metrics.ttft.observe))
    elif step == "write a stream chunk":
        import roles.tokenizer.response_flow as module

        monkeypatch.setattr(module, "_event", fail_on_call(2, module._event))
    else:
        raise AssertionError(step)


STEPS = [
    ("encode the request", False),
    ("encode the request", True),
    ("send to the scheduler", False),
    ("send to the scheduler", True),
    ("read the first answer", False),
    ("read the first answer", True),
    ("detokenize a later token", False),
    ("detokenize a later token", True),
    ("count the first token", False),
    ("count the first token", True),
    ("write a stream chunk", True),
]


@pytest.fixture(scope="module")
def tokenizer():
    return load_text_tokenizer("smollm2")


@pytest.mark.parametrize(("step", "stream"), STEPS)
def test_a_fault_at_each_step_releases_the_slot(tokenizer, monkeypatch, caplog, step, stream):
    ids = tokenizer.encode(" Hello world foo bar", add_special_tokens=False)
    body = {"model": "smollm2", "prompt": "Hi", "max_tokens": 32, "n": 2, "stream": stream}

    async def scenario():
        # The scheduler sends a few tokens and keeps each request running: only an abort ends it there.
        async with FrontWithPeer(tokenizer, lambda generate: Tokens(ids, None)) as front:
            _inject(step, front, monkeypatch)
            transport = httpx.ASGITransport(app=create_app(front.state))  # raises what the app lets out
            async with httpx.AsyncClient(transport=transport, base_url="http://front") as http:
                response = await asyncio.wait_for(http.post("/v1/completions", json=body), 60)
            received = [generate.request_id for generate in front.peer.generates]
            aborted = await front.wait_for_aborts(len(received))
            return response, front.state.client.num_in_flight, received, aborted

    response, num_in_flight, received, aborted = asyncio.run(scenario())
    assert num_in_flight == 0
    assert set(aborted) == set(received)
    if response.status_code == 200:  # the stream had begun: it ends with an error event, then [DONE]
        assert stream
        events = [line[6:] for line in response.text.splitlines() if line.startswith("data: ")]
        assert events[-1] == "[DONE]"
        error = json.loads(events[-2])["error"]
    else:
        assert response.status_code == 500, response.text
        error = response.json()["error"]
        request_id = error["message"].split("(request ")[1].split(";")[0]
        failed = [r for r in caplog.records if r.exc_info and "injected" in str(r.exc_info[1])]
        assert [r.getMessage() for r in failed] == [f"request {request_id} failed"]  # once, with its id
    assert error["type"] == "server_error" and error["code"] == "internal_error"
    assert "injected" not in error["message"]  # internals stay in the log
