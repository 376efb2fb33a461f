"""POST /v1/chat/completions: the model's chat template, then the shared completion flow."""

from __future__ import annotations

import uuid

from fastapi import Request

from roles.tokenizer.front_state import FrontState
from roles.tokenizer.generation import ChoiceResult, Delta, TokenInfo
from roles.tokenizer.request_log import record_of
from roles.tokenizer.request_prep import chat_prompt_ids, check_model, check_not_draining, sampling_fields
from roles.tokenizer.response_flow import FlowSpec, run_flow
from roles.tokenizer.schemas import ChatCompletionRequest
from roles.tokenizer.structured_output import request_grammar


def chat_logprobs(state: FrontState, tokens: list[TokenInfo]) -> dict:
    decode = state.tokenizer.decode

    def entry(token_id: int, logprob: float | None) -> dict:
        text = decode([token_id], skip_special_tokens=False)
        return {"token": text, "logprob": logprob, "bytes": list(text.encode("utf-8"))}

    return {
        "content": [
            {
                **entry(t.token_id, t.logprob),
                "top_logprobs": [entry(tid, lp) for tid, lp in (t.top_logprobs or [])],
            }
            for t in tokens
        ]
    }


async def create_chat_completion(state: FrontState, request: Request, body: ChatCompletionRequest):
    record = record_of(request)
    record.request_id = f"chatcmpl-{uuid.uuid4().hex}"
    check_model(state, body.model)
    check_not_draining(state)
    grammar = request_grammar(body)
    prompt = await chat_prompt_ids(state, body.messages)
    fields = sampling_fields(state, body, len(prompt))

    def chunk_choice(delta: Delta, is_first: bool) -> dict:
        content = {"role": "assistant", "content": delta.text} if is_first else {"content": delta.text}
        if delta.finish_reason is not None and not delta.text and not is_first:
            content = {}
        return {
            "index": delta.index,
            "delta": content,
            "logprobs": chat_logprobs(state, delta.tokens) if body.logprobs else None,
            "finish_reason": delta.finish_reason,
        }

    def choices(results: list[ChoiceResult]) -> list[dict]:
        return [
            {
                "index": r.index,
                "message": {"role": "assistant", "content": r.text},
                "logprobs": chat_logprobs(state, r.tokens) if body.logprobs else None,
                "finish_reason": r.finish_reason,
            }
            for r in results
        ]

    spec = FlowSpec(
        endpoint="chat",
        prompts=[prompt],
        fields=[fields],
        n=body.n,
        stops=body.stop_strings,
        stream=body.stream,
        include_usage=bool(body.stream_options and body.stream_options.include_usage),
        model=body.model,
        response_id=record.request_id,
        body_object="chat.completion",
        chunk_object="chat.completion.chunk",
        make_chunk_choice=chunk_choice,
        make_choices=choices,
        grammar=grammar,
    )
    return await run_flow(state, request, spec, record)
