"""The flow both completion endpoints share: start every choice, then stream SSE chunks or collect one
response; abort in the scheduler when the client goes away; count everything in the metrics."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from fastapi import Request
from fastapi.responses import JSONResponse, StreamingResponse

from roles.protocol import SamplingFields
from roles.tokenizer.front_state import FrontState
from roles.tokenizer.generation import ChoiceResult, Delta, collect, merge_choices, run_choice
from roles.tokenizer.openai_errors import OpenAIError, error_body
from roles.tokenizer.request_prep import choice_seed


@dataclass
class FlowSpec:
    endpoint: str  # "completions" | "chat"
    prompts: list[list[int]]  # one id list per prompt
    fields: list[SamplingFields]  # per prompt
    n: int
    stops: list[str]
    stream: bool
    include_usage: bool
    model: str
    response_id: str
    body_object: str  # "text_completion" | "chat.completion"
    chunk_object: str  # "text_completion" | "chat.completion.chunk"
    # The endpoint's own choice shapes: one streamed delta (is it the choice's first?), and every result.
    make_chunk_choice: Callable[[Delta, bool], dict]
    make_choices: Callable[[list[ChoiceResult]], list[dict]]
    created: int = field(default_factory=lambda: int(time.time()))

    def envelope(self, object_name: str, choices: list[dict], usage: dict | None = None) -> dict:
        body = {
            "id": self.response_id,
            "object": object_name,
            "created": self.created,
            "model": self.model,
            "choices": choices,
        }
        if usage is not None:
            body["usage"] = usage
        return body


def _deltas(state: FrontState, spec: FlowSpec) -> AsyncIterator[Delta]:
    streams = []
    for prompt_index, (prompt_ids, fields) in enumerate(zip(spec.prompts, spec.fields, strict=True)):
        for choice in range(spec.n):
            index = prompt_index * spec.n + choice
            streams.append(
                run_choice(
                    state.client, state.tokenizer, index, prompt_ids, choice_seed(fields, choice), spec.stops
                )
            )
    return merge_choices(streams)


def _usage(spec: FlowSpec, num_completion_tokens: int) -> dict:
    prompt_tokens = sum(len(p) for p in spec.prompts)
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": num_completion_tokens,
        "total_tokens": prompt_tokens + num_completion_tokens,
    }


async def _wait_for_disconnect(request: Request) -> None:
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


async def run_flow(state: FrontState, request: Request, spec: FlowSpec):
    metrics, started = state.metrics, time.monotonic()
    num_choices = len(spec.prompts) * spec.n
    metrics.prompt_tokens.inc("tokenizer", amount=sum(len(p) for p in spec.prompts) * spec.n)
    if spec.stream:
        return StreamingResponse(_sse(state, spec, started), media_type="text/event-stream")
    deltas = _deltas(state, spec)
    timed = _observe_first_token(state, deltas, started)
    work = asyncio.ensure_future(collect(timed, num_choices))
    watcher = asyncio.ensure_future(_wait_for_disconnect(request))
    try:
        done, _ = await asyncio.wait(
            {work, watcher}, timeout=state.settings.request_timeout_s, return_when=asyncio.FIRST_COMPLETED
        )
        if work not in done:
            work.cancel()
            await asyncio.gather(work, return_exceptions=True)
            if watcher in done:
                return JSONResponse(error_body(499, "client closed the request"), 499)
            raise OpenAIError(
                503, f"request timed out after {state.settings.request_timeout_s}s", code="timeout"
            )
        results = work.result()
    finally:
        watcher.cancel()
        await deltas.aclose()
    num_tokens = sum(r.num_tokens for r in results)
    metrics.generated_tokens.inc("tokenizer", amount=num_tokens)
    metrics.latency.observe(time.monotonic() - started, "tokenizer", spec.endpoint)
    return JSONResponse(spec.envelope(spec.body_object, spec.make_choices(results), _usage(spec, num_tokens)))


async def _observe_first_token(state: FrontState, deltas: AsyncIterator[Delta], started: float):
    is_first = True
    async for delta in deltas:
        if is_first and delta.tokens:
            state.metrics.ttft.observe(time.monotonic() - started, "tokenizer")
            is_first = False
        yield delta


async def _sse(state: FrontState, spec: FlowSpec, started: float) -> AsyncIterator[bytes]:
    deltas = _deltas(state, spec)
    num_tokens = 0
    first_seen: set[int] = set()
    try:
        async for delta in _observe_first_token(state, deltas, started):
            num_tokens += len(delta.tokens)
            is_first = delta.index not in first_seen
            first_seen.add(delta.index)
            yield _event(spec.envelope(spec.chunk_object, [spec.make_chunk_choice(delta, is_first)]))
        if spec.include_usage:
            yield _event(spec.envelope(spec.chunk_object, [], _usage(spec, num_tokens)))
    except OpenAIError as error:
        yield _event(error_body(error.status, error.message, error.param, error.code))
    finally:
        await deltas.aclose()  # a disconnected client cancels us here: the scheduler aborts at once
        state.metrics.generated_tokens.inc("tokenizer", amount=num_tokens)
        state.metrics.latency.observe(time.monotonic() - started, "tokenizer", spec.endpoint)
    yield b"data: [DONE]\n\n"


def _event(payload: dict) -> bytes:
    return b"data: " + json.dumps(payload, ensure_ascii=False).encode() + b"\n\n"
