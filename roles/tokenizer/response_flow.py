"""The flow both completion endpoints share: start every choice (the scheduler accepts or refuses it
before any byte goes out), then stream SSE chunks or collect one response; abort in the scheduler when
the client goes away; count everything in the metrics and the request's log record."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass, field

from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse

from roles.protocol import SamplingFields
from roles.tokenizer.engine_client import EngineClient
from roles.tokenizer.front_state import FrontState
from roles.tokenizer.generation import (
    ChoiceResult,
    Delta,
    StartedChoice,
    collect,
    merge_choices,
    run_choice,
    start_choices,
)
from roles.tokenizer.internal_errors import internal_error_body
from roles.tokenizer.openai_errors import OpenAIError, error_body
from roles.tokenizer.request_log import RequestRecord
from roles.tokenizer.request_prep import choice_seed

log = logging.getLogger("roleserve.tokenizer")


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
    make_chunk_choice: Callable[[Delta, bool], dict | None]
    make_choices: Callable[[list[ChoiceResult]], list[dict]]
    grammar: str | None = None  # every choice's output matches it (structured_output)
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


def _choice_requests(spec: FlowSpec) -> list[tuple[list[int], SamplingFields]]:
    """One (prompt ids, sampling) per choice; choice index = prompt index * n + choice."""
    return [
        (prompt_ids, choice_seed(fields, choice))
        for prompt_ids, fields in zip(spec.prompts, spec.fields, strict=True)
        for choice in range(spec.n)
    ]


def _deltas(state: FrontState, spec: FlowSpec, started: list[StartedChoice]) -> AsyncIterator[Delta]:
    streams = [
        run_choice(state.client, state.tokenizer, index, choice, spec.stops, spec.prompts[index // spec.n])
        for index, choice in enumerate(started)
    ]
    return merge_choices(streams)


def _usage(spec: FlowSpec, num_completion_tokens: int, cached_by_choice: dict[int, int]) -> dict:
    """Usage counts each prompt once; its cached tokens are those its first choice found in the prefix cache."""
    prompt_tokens = sum(len(p) for p in spec.prompts)
    cached = sum(cached_by_choice.get(prompt * spec.n, 0) for prompt in range(len(spec.prompts)))
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": num_completion_tokens,
        "total_tokens": prompt_tokens + num_completion_tokens,
        "prompt_tokens_details": {"cached_tokens": cached},
    }


async def _wait_for_disconnect(request: Request) -> None:
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


async def run_flow(state: FrontState, request: Request, spec: FlowSpec, record: RequestRecord):
    """Start every choice (a refusal is an error status, also for streams), then stream or collect."""
    metrics, started_at = state.metrics, time.monotonic()
    record.num_prompt_tokens = sum(len(p) for p in spec.prompts) * spec.n
    metrics.prompt_tokens.inc(record.num_prompt_tokens)
    if spec.stream:
        started = await _unless_disconnected(
            state, request, start_choices(state.client, _choice_requests(spec), spec.grammar)
        )
        return _ChoicesStream(_sse(state, spec, started, started_at, record), state.client, started)
    results = await _unless_disconnected(state, request, _start_and_collect(state, spec, started_at))
    num_tokens = sum(r.num_tokens for r in results)
    record.note_results(num_tokens, [r.finish_reason for r in results])
    metrics.note_completion(spec.endpoint, num_tokens, time.monotonic() - started_at)
    cached = {r.index: r.num_cached_tokens for r in results}
    usage = _usage(spec, num_tokens, cached)
    return JSONResponse(spec.envelope(spec.body_object, spec.make_choices(results), usage))


async def _start_and_collect(state: FrontState, spec: FlowSpec, started_at: float) -> list[ChoiceResult]:
    started = await start_choices(state.client, _choice_requests(spec), spec.grammar)
    deltas = _deltas(state, spec, started)
    try:
        return await collect(_observe_token_times(state, started, deltas, started_at), len(started))
    finally:
        await deltas.aclose()


async def _unless_disconnected(state: FrontState, request: Request, work: Coroutine):
    """Await ``work`` unless the client goes away (499) or http.request_timeout_s passes (503)."""
    task = asyncio.ensure_future(work)
    watcher = asyncio.ensure_future(_wait_for_disconnect(request))
    try:
        done, _ = await asyncio.wait(
            {task, watcher}, timeout=state.settings.request_timeout_s, return_when=asyncio.FIRST_COMPLETED
        )
    except BaseException:  # we were cancelled ourselves: so is the work
        task.cancel()
        raise
    finally:
        watcher.cancel()
    if task in done:
        return task.result()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)  # its choices abort in the scheduler
    if watcher in done:
        raise OpenAIError(499, "client closed the request", code="client_closed_request")
    raise OpenAIError(503, f"request timed out after {state.settings.request_timeout_s}s", code="timeout")


class _ChoicesStream(StreamingResponse):
    """SSE of started choices; however it ends (even before its first chunk, which leaves the body's own
    cleanup unrun), whatever still runs in the scheduler is aborted (a no-op for the choices that ended)."""

    def __init__(self, body: AsyncIterator[bytes], client: EngineClient, started: list[StartedChoice]):
        super().__init__(body, media_type="text/event-stream")
        self.client = client
        self.started = started

    async def __call__(self, scope, receive, send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            for choice in self.started:
                await self.client.abort(choice.request_id)


async def _observe_token_times(
    state: FrontState, started: list[StartedChoice], deltas: AsyncIterator[Delta], started_at: float
):
    """Record each choice's queue time (the scheduler measured it), the request's time to first token and
    the time between consecutive tokens of each choice."""
    metrics = state.metrics
    for choice in started:
        if choice.first.queue_time_s is not None:
            metrics.queue_time.observe(choice.first.queue_time_s)
    last_token_at: dict[int, float] = {}  # choice index -> when its latest token came
    async for delta in deltas:
        if delta.tokens:
            now = time.monotonic()
            previous = last_token_at.get(delta.index)
            if previous is not None:
                metrics.itl.observe(now - previous)
            elif not last_token_at:
                metrics.ttft.observe(now - started_at)
            last_token_at[delta.index] = now
        yield delta


async def _sse(
    state: FrontState, spec: FlowSpec, started: list[StartedChoice], started_at: float, record: RequestRecord
) -> AsyncIterator[bytes]:
    deltas = _deltas(state, spec, started)
    num_tokens = 0
    first_seen: set[int] = set()
    finish_reasons: dict[int, str] = {}
    cached: dict[int, int] = {}
    try:
        async for delta in _observe_token_times(state, started, deltas, started_at):
            num_tokens += len(delta.tokens)
            if delta.num_cached_tokens is not None:
                cached[delta.index] = delta.num_cached_tokens
            is_first = delta.index not in first_seen
            first_seen.add(delta.index)
            if delta.finish_reason is not None:
                finish_reasons[delta.index] = delta.finish_reason
            choice = spec.make_chunk_choice(delta, is_first)
            if choice is not None:  # None: the endpoint holds this text back for now (tool calls)
                yield _event(spec.envelope(spec.chunk_object, [choice]))
        if spec.include_usage:
            yield _event(spec.envelope(spec.chunk_object, [], _usage(spec, num_tokens, cached)))
    except OpenAIError as error:
        yield _event(error_body(error.status, error.message, error.param, error.code))
    except Exception:  # the 200 is sent: a fault can only end the stream, as an error event
        log.exception("request %s failed while streaming", spec.response_id)
        yield _event(internal_error_body(spec.response_id))
    finally:
        await deltas.aclose()  # a disconnected client cancels us here: the scheduler aborts at once
        record.note_results(num_tokens, [finish_reasons.get(i) for i in range(len(started))])
        state.metrics.note_completion(spec.endpoint, num_tokens, time.monotonic() - started_at)
    yield b"data: [DONE]\n\n"


def _event(payload: dict) -> bytes:
    return b"data: " + json.dumps(payload, ensure_ascii=False).encode() + b"\n\n"
