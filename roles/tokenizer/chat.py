"""POST /v1/chat/completions: the model's chat template, then the shared completion flow; with tools, the
answer's call blocks become OpenAI ``tool_calls`` (tool_calls.py)."""

from __future__ import annotations

import uuid

from starlette.requests import Request

from roles.tokenizer.front_state import FrontState
from roles.tokenizer.generation import ChoiceResult, Delta, TokenInfo
from roles.tokenizer.openai_errors import OpenAIError
from roles.tokenizer.request_log import record_of
from roles.tokenizer.request_prep import chat_prompt_ids, check_model, check_not_draining, sampling_fields
from roles.tokenizer.response_flow import FlowSpec, run_flow
from roles.tokenizer.schemas import ChatCompletionRequest
from roles.tokenizer.structured_output import request_grammar
from roles.tokenizer.tool_calls import (
    HeldText,
    openai_tool_calls,
    parse_tool_calls,
    resolve_tool_choice,
    tool_call_grammar,
)


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


def _grammar(body: ChatCompletionRequest, tool_choice: str) -> str | None:
    """The response format's grammar or, when a call is required, the calls' one; never both."""
    tools_grammar = tool_call_grammar(body.tools, tool_choice, body.parallel_tool_calls)
    output_grammar = request_grammar(body)
    if tools_grammar is not None and output_grammar is not None:
        raise OpenAIError(
            400,
            "a required tool call cannot also follow response_format, regex or grammar",
            "tool_choice",
            "invalid_value",
        )
    return tools_grammar or output_grammar


def _finish(reason: str | None, has_calls: bool) -> str | None:
    return "tool_calls" if has_calls and reason == "stop" else reason


async def create_chat_completion(state: FrontState, request: Request, body: ChatCompletionRequest):
    record = record_of(request)
    record.request_id = f"chatcmpl-{uuid.uuid4().hex}"
    check_model(state, body.model)
    check_not_draining(state)
    tool_choice = resolve_tool_choice(body)
    grammar = _grammar(body, tool_choice)
    offers_tools = tool_choice != "none"
    names = {tool.function.name for tool in body.tools or []} if offers_tools else set()
    prompt = await chat_prompt_ids(state, body.messages, tools=body.tools if offers_tools else None)
    fields = sampling_fields(state, body, len(prompt))
    held: dict[int, HeldText] = {}  # streamed choice -> its text while it may be a call
    started_role: set[int] = set()  # streamed choices whose first chunk (with the role) went out

    def chunk(delta: Delta, content: dict, tokens: list) -> dict:
        if delta.index not in started_role:
            started_role.add(delta.index)
            content = {"role": "assistant", **content}
        return {
            "index": delta.index,
            "delta": content,
            "logprobs": chat_logprobs(state, tokens) if body.logprobs else None,
            "finish_reason": delta.finish_reason,
        }

    def chunk_choice(delta: Delta, is_first: bool) -> dict | None:
        text, tokens = delta.text, delta.tokens
        if offers_tools:
            holder = held.setdefault(delta.index, HeldText(holds_everything=tool_choice not in ("auto",)))
            text, tokens = holder.feed(delta.text, delta.tokens)
            if delta.finish_reason is not None and not holder.is_released:
                content, calls = parse_tool_calls(holder.held, names)
                if calls:
                    delta.finish_reason = _finish(delta.finish_reason, True)
                    shaped = {"content": content, "tool_calls": openai_tool_calls(calls, with_index=True)}
                    return chunk(delta, shaped, holder.held_tokens)
                text, tokens = holder.held, holder.held_tokens  # not a call after all: all of it is content
            elif not text and delta.finish_reason is None:
                return None  # held back: nothing to send yet
        if delta.finish_reason is not None and not text and delta.index in started_role:
            return chunk(delta, {}, tokens)
        return chunk(delta, {"content": text}, tokens)

    def message(result: ChoiceResult) -> tuple[dict, str | None]:
        if offers_tools:
            content, calls = parse_tool_calls(result.text, names)
            if calls:
                shaped = {"role": "assistant", "content": content, "tool_calls": openai_tool_calls(calls)}
                return shaped, _finish(result.finish_reason, True)
        return {"role": "assistant", "content": result.text}, result.finish_reason

    def choices(results: list[ChoiceResult]) -> list[dict]:
        shaped = []
        for r in results:
            content, finish_reason = message(r)
            shaped.append(
                {
                    "index": r.index,
                    "message": content,
                    "logprobs": chat_logprobs(state, r.tokens) if body.logprobs else None,
                    "finish_reason": finish_reason,
                }
            )
        return shaped

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
