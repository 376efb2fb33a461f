"""POST /v1/completions."""

from __future__ import annotations

import uuid

from starlette.requests import Request

from roles.tokenizer.front_state import FrontState
from roles.tokenizer.generation import ChoiceResult, Delta, TokenInfo
from roles.tokenizer.openai_errors import OpenAIError
from roles.tokenizer.request_log import record_of
from roles.tokenizer.request_prep import check_model, check_not_draining, prompt_id_lists, sampling_fields
from roles.tokenizer.response_flow import FlowSpec, run_flow
from roles.tokenizer.schemas import CompletionRequest
from roles.tokenizer.structured_output import request_grammar


def completion_logprobs(state: FrontState, tokens: list[TokenInfo], text_start: int) -> dict:
    decode = state.tokenizer.decode
    pieces = [decode([t.token_id], skip_special_tokens=False) for t in tokens]
    offsets, position = [], text_start
    for piece in pieces:
        offsets.append(position)
        position += len(piece)
    return {
        "tokens": pieces,
        "token_logprobs": [t.logprob for t in tokens],
        "top_logprobs": [_top_by_text(decode, t.top_logprobs or []) for t in tokens],
        "text_offset": offsets,
    }


def _top_by_text(decode, top: list[tuple[int, float]]) -> dict[str, float]:
    """OpenAI's completion format keys alternatives by text; where two decode alike, the likelier one stays."""
    shown: dict[str, float] = {}
    for token_id, logprob in top:  # highest first
        shown.setdefault(decode([token_id], skip_special_tokens=False), logprob)
    return shown


async def create_completion(state: FrontState, request: Request, body: CompletionRequest):
    record = record_of(request)
    record.request_id = f"cmpl-{uuid.uuid4().hex}"
    check_model(state, body.model)
    check_not_draining(state)
    grammar = request_grammar(body)
    prompts = await prompt_id_lists(state, body.prompt)
    fields = [sampling_fields(state, body, len(p)) for p in prompts]
    has_logprobs = fields[0].logprobs is not None
    if body.echo and has_logprobs:
        raise OpenAIError(400, "echo together with logprobs is not supported", "echo", "unsupported")
    echoes = [state.tokenizer.decode(p, skip_special_tokens=False) if body.echo else "" for p in prompts]
    emitted = {}  # choice index -> characters streamed so far (for text_offset)

    def choice(index: int, text: str, tokens: list[TokenInfo], start: int, finish_reason: str | None) -> dict:
        logprobs = completion_logprobs(state, tokens, start) if has_logprobs else None
        return {"index": index, "text": text, "logprobs": logprobs, "finish_reason": finish_reason}

    def chunk_choice(delta: Delta, is_first: bool) -> dict:
        prefix = echoes[delta.index // body.n] if is_first else ""
        start = emitted.get(delta.index, len(prefix))
        emitted[delta.index] = start + len(delta.text)
        return choice(delta.index, prefix + delta.text, delta.tokens, start, delta.finish_reason)

    def choices(results: list[ChoiceResult]) -> list[dict]:
        prefixes = [echoes[r.index // body.n] for r in results]
        return [
            choice(r.index, prefix + r.text, r.tokens, len(prefix), r.finish_reason)
            for r, prefix in zip(results, prefixes, strict=True)
        ]

    spec = FlowSpec(
        endpoint="completions",
        prompts=prompts,
        fields=fields,
        n=body.n,
        stops=body.stop_strings,
        stream=body.stream,
        include_usage=bool(body.stream_options and body.stream_options.include_usage),
        model=body.model,
        response_id=record.request_id,
        body_object="text_completion",
        chunk_object="text_completion",
        make_chunk_choice=chunk_choice,
        make_choices=choices,
        grammar=grammar,
    )
    return await run_flow(state, request, spec, record)
