"""One choice of a completion: started (accepted or refused by the scheduler), then token events in and
text deltas out, with stop strings and logprobs."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field

from roles.protocol import Overloaded, SamplingFields, TokenEvent
from roles.tokenizer.detokenizer import IncrementalDetokenizer, StopStringMatcher
from roles.tokenizer.engine_client import EngineClient
from roles.tokenizer.openai_errors import OpenAIError


@dataclass
class TokenInfo:
    token_id: int
    logprob: float | None
    top_logprobs: list[tuple[int, float]] | None


@dataclass
class Delta:
    index: int
    text: str
    tokens: list[TokenInfo] = field(default_factory=list)
    finish_reason: str | None = None
    num_cached_tokens: int | None = None  # with the choice's first token: prompt tokens the prefix cache held


@dataclass
class ChoiceResult:
    index: int
    text: str = ""
    tokens: list[TokenInfo] = field(default_factory=list)
    finish_reason: str | None = None
    num_tokens: int = 0
    num_cached_tokens: int = 0


@dataclass
class StartedChoice:
    """A request the scheduler accepted: its id, its event queue and the first event (a token or the end)."""

    request_id: str
    queue: asyncio.Queue
    first: TokenEvent


async def start_choice(
    client: EngineClient, prompt_ids: list[int], sampling: SamplingFields, grammar: str | None = None
) -> StartedChoice:
    """Submit one request and wait for the scheduler's first answer, so a refusal (Overloaded: 503 with
    Retry-After; rejected: 400) is known before any byte of the response is sent."""
    request_id = client.new_request_id()
    queue = await client.submit(request_id, prompt_ids, sampling, grammar)
    try:
        first = await queue.get()
        if isinstance(first, Overloaded):
            raise OpenAIError(
                503,
                "the server is at capacity (the scheduler's queue is full); retry later",
                code="server_overloaded",
                retry_after_s=first.retry_after_s,
            )
        refused(first)
    except BaseException:  # cancelled (the client went away, another choice was refused) or failed
        await client.abort(request_id)  # a no-op for a request the scheduler already ended
        raise
    return StartedChoice(request_id, queue, first)


def refused(event: TokenEvent) -> None:
    """An event that ends a request without an answer, as the client's error: "error" is the scheduler
    refusing the request (400), "lost" its replica dying with it and restarted (503, retry), "failed" a role it
    waited on dying or hanging (503 naming the role)."""
    if event.finish_reason == "error":
        raise OpenAIError(400, event.error or "the scheduler rejected the request", code="invalid_value")
    if event.finish_reason == "lost":
        raise OpenAIError(503, event.error or "the scheduler lost the request", code="scheduler_restarted")
    if event.finish_reason == "failed":
        raise OpenAIError(503, event.error or "a role the request waited on failed", code="role_failed")


async def start_choices(
    client: EngineClient, requests: list[tuple[list[int], SamplingFields]], grammar: str | None = None
) -> list[StartedChoice]:
    """Start every choice (each held to ``grammar``, when given); if any is refused, abort those that
    started and raise the refusal."""
    tasks = [
        asyncio.ensure_future(start_choice(client, ids, sampling, grammar)) for ids, sampling in requests
    ]
    try:
        outcomes = await asyncio.gather(*tasks, return_exceptions=True)
    except BaseException:
        for task in tasks:
            task.cancel()
        outcomes = await asyncio.gather(*tasks, return_exceptions=True)
        await _abort_started(client, outcomes)
        raise
    errors = [o for o in outcomes if isinstance(o, BaseException)]
    if errors:
        await _abort_started(client, outcomes)
        raise errors[0]
    return outcomes


async def _abort_started(client: EngineClient, outcomes: list) -> None:
    for outcome in outcomes:
        if isinstance(outcome, StartedChoice):
            await client.abort(outcome.request_id)


async def run_choice(
    client: EngineClient,
    tokenizer,
    index: int,
    started: StartedChoice,
    stop_strings: list[str],
    prompt_ids: Sequence[int] = (),
) -> AsyncIterator[Delta]:
    """Yield deltas of one started choice until it finishes; aborts the request if the consumer goes away."""
    request_id = started.request_id
    detokenizer = IncrementalDetokenizer(tokenizer, context=prompt_ids)
    stops = StopStringMatcher(stop_strings)
    finished = False
    event: TokenEvent = started.first
    try:
        while True:
            refused(event)
            tokens = []
            text = ""
            if event.token_id >= 0:
                tokens.append(TokenInfo(event.token_id, event.logprob, event.top_logprobs))
                text = stops.feed(detokenizer.push(event.token_id))
            cached = event.num_cached_tokens
            if stops.is_stopped:
                await client.abort(request_id)
                finished = True
                yield Delta(index, text, tokens, "stop", cached)
                return
            if event.finish_reason is not None:
                finished = True
                text += stops.feed(detokenizer.flush())  # a character left incomplete shows as U+FFFD
                reason = "stop" if stops.is_stopped else event.finish_reason
                yield Delta(index, text + stops.flush(), tokens, reason, cached)
                return
            if text or tokens:
                yield Delta(index, text, tokens, num_cached_tokens=cached)
            event = await started.queue.get()
    finally:
        if not finished:
            await client.abort(request_id)
        else:
            client.release(request_id)


async def merge_choices(streams: list[AsyncIterator[Delta]]) -> AsyncIterator[Delta]:
    """Interleave several choices' deltas in arrival order."""
    if len(streams) == 1:
        try:
            async for delta in streams[0]:
                yield delta
        finally:
            await streams[0].aclose()  # at once, not when the garbage collector gets to it
        return
    queue: asyncio.Queue = asyncio.Queue()
    done = object()

    async def pump(stream: AsyncIterator[Delta]) -> None:
        try:
            async for delta in stream:
                await queue.put(delta)
        except BaseException as error:  # surfaced to the consumer below
            await queue.put(error)
        finally:
            await queue.put(done)

    tasks = [asyncio.create_task(pump(stream)) for stream in streams]
    remaining = len(tasks)
    try:
        while remaining:
            item = await queue.get()
            if item is done:
                remaining -= 1
            elif isinstance(item, BaseException):
                raise item
            else:
                yield item
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def collect(deltas: AsyncIterator[Delta], num_choices: int) -> list[ChoiceResult]:
    results = [ChoiceResult(i) for i in range(num_choices)]
    async for delta in deltas:
        result = results[delta.index]
        result.text += delta.text
        result.tokens.extend(delta.tokens)
        result.num_tokens += len(delta.tokens)
        if delta.finish_reason is not None:
            result.finish_reason = delta.finish_reason
        if delta.num_cached_tokens is not None:
            result.num_cached_tokens = delta.num_cached_tokens
    return results
