"""Turn a validated OpenAI request into what the schedulers take: prompt ids and sampling fields."""

from __future__ import annotations

import asyncio
import functools

import msgspec

from roles.protocol import SamplingError, SamplingFields, validate_sampling
from roles.tokenizer.chat_template import ChatTemplateError
from roles.tokenizer.front_state import FrontState
from roles.tokenizer.openai_errors import OpenAIError
from roles.tokenizer.schemas import SamplingRequest
from roles.tokenizer.tool_prompt import template_inputs


def check_model(state: FrontState, model: str) -> None:
    if model != state.settings.served_name:
        raise OpenAIError(
            404,
            f"The model `{model}` does not exist; this server serves `{state.settings.served_name}`",
            "model",
            "model_not_found",
        )


def check_not_draining(state: FrontState, role: str = "scheduler") -> None:
    """Admission itself is the scheduler's (it owns the queue); a draining front takes nothing new, nor does
    one whose ``role`` (scheduler or encoder) the launcher reports down or late: the request would hang."""
    if state.is_draining:
        why = f": {state.failure}" if state.failure else ""
        raise OpenAIError(503, f"the server is shutting down{why}", code="server_shutting_down")
    unavailable = state.unavailable_for(role)
    if unavailable:
        raise OpenAIError(
            503,
            f"not accepting requests: {', '.join(unavailable)}"
            + (f" ({state.failure})" if state.failure else ""),
            code="role_unavailable",
            retry_after_s=1,
        )


async def prompt_id_lists(state: FrontState, prompt) -> list[list[int]]:
    """A completion prompt as token ids: string, list of strings, token ids or lists of token ids."""
    if isinstance(prompt, str):
        prompts = [prompt]
    elif prompt and all(isinstance(p, int) for p in prompt):
        return [checked_ids(state, prompt)]
    else:
        prompts = list(prompt)
    if not prompts:
        raise OpenAIError(400, "prompt must not be empty", "prompt", "invalid_value")
    if all(isinstance(p, list) for p in prompts):
        return [checked_ids(state, p) for p in prompts]
    return [await encode_text(state, p, "prompt", add_special_tokens=True) for p in prompts]


def checked_ids(state: FrontState, ids: list[int], param: str = "prompt") -> list[int]:
    """Token ids as given, each one of the model's (400 otherwise: never an error deeper in)."""
    vocab = getattr(state.tokenizer, "vocab_size", None) or 2**31
    if not all(0 <= token < vocab for token in ids):
        raise OpenAIError(400, f"{param} token ids must be in [0, {vocab})", param, "invalid_value")
    return list(ids)


async def encode_text(state: FrontState, text: str, param: str, add_special_tokens: bool) -> list[int]:
    """Text to token ids, in one of tokenizer.encode_threads threads: a long prompt never stalls the event
    loop (other requests, /health), as tokenizers releases the GIL while it encodes. Text that is not valid Unicode (a lone surrogate such as \\ud800, which JSON can carry) is
    a 400 naming the field."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise OpenAIError(
            400,
            f"{param} is not valid Unicode ({error.reason} at character {error.start})",
            param,
            "invalid_value",
        ) from None
    encode = functools.partial(state.tokenizer.encode, text, add_special_tokens=add_special_tokens)
    return await asyncio.get_running_loop().run_in_executor(state.encode_pool, encode)


async def chat_prompt_ids(
    state: FrontState, messages, add_generation_prompt: bool = True, tools=None
) -> list[int]:
    """Chat messages (schemas.ChatMessage) and the tools offered (schemas.Tool, or None) through the model's
    chat template, as token ids. A template that fails (its raise_exception() names what is wrong with the
    conversation, or it is broken) is a 400 naming where the template came from."""
    template, origin = state.tokenizer.chat_template_for(bool(tools))
    plain, extra = template_inputs(messages, tools, template)
    try:
        text = state.tokenizer.apply_chat_template(
            plain, add_generation_prompt=add_generation_prompt, **extra
        )
    except ChatTemplateError as error:
        raise OpenAIError(
            400,
            f"the chat template ({origin}) failed on these messages: {error}",
            "messages",
            "invalid_value",
        ) from None
    return await encode_text(state, text, "messages", add_special_tokens=False)


def sampling_fields(state: FrontState, request: SamplingRequest, prompt_len: int) -> SamplingFields:
    """The request's sampling options, validated once against SamplingFields, with max_tokens settled."""
    values, names = request.sampling_values()
    try:
        fields = validate_sampling(values, names)
    except SamplingError as error:
        raise OpenAIError(400, str(error), error.field, "invalid_value") from None
    settings = state.settings
    is_max_given = "max_tokens" in values
    wanted = fields.max_tokens if is_max_given else settings.default_max_tokens
    if prompt_len == 0:
        raise OpenAIError(400, "the prompt has no tokens", "prompt", "invalid_value")
    if prompt_len + wanted > settings.context_length:
        if prompt_len >= settings.context_length or is_max_given:
            raise OpenAIError(
                400,
                f"This model's maximum context length is {settings.context_length} tokens. However, you requested "
                f"{prompt_len + wanted} tokens ({prompt_len} in the prompt, {wanted} for the completion).",
                names.get("max_tokens", "max_tokens") if prompt_len < settings.context_length else "prompt",
                "context_length_exceeded",
            )
        wanted = settings.context_length - prompt_len  # the default shrinks to what fits
    fields.max_tokens = wanted
    vocab = getattr(state.tokenizer, "vocab_size", None)
    if vocab is not None:
        fields.stop_token_ids = [t for t in fields.stop_token_ids if t < vocab]
    # A turn also ends at the model's end-of-turn tokens (<|eot_id|>, <|im_end|>, ...).
    if not fields.ignore_eos:
        ends = getattr(state.tokenizer, "eos_token_ids", frozenset())
        fields.stop_token_ids += sorted(set(ends) - set(fields.stop_token_ids))
    return fields


def choice_seed(fields: SamplingFields, choice: int) -> SamplingFields:
    """n > 1 with a seed: each choice gets its own reproducible stream."""
    if fields.seed is None or choice == 0:
        return fields
    return msgspec.structs.replace(fields, seed=(fields.seed + choice) % 2**63)  # stays in bounds
