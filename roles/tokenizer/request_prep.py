"""Turn a validated OpenAI request into what the schedulers take: prompt ids and sampling fields."""

from __future__ import annotations

from roles.protocol import SamplingFields
from roles.tokenizer.front_state import FrontState
from roles.tokenizer.openai_errors import OpenAIError
from roles.tokenizer.schemas import SamplingRequest


def check_model(state: FrontState, model: str) -> None:
    if model != state.settings.served_name:
        raise OpenAIError(
            404,
            f"The model `{model}` does not exist; this server serves `{state.settings.served_name}`",
            "model",
            "model_not_found",
        )


def check_capacity(state: FrontState, num_new: int) -> None:
    if state.is_draining:
        raise OpenAIError(503, "the server is shutting down", code="server_shutting_down")
    if state.client.num_in_flight + num_new > state.settings.max_in_flight:
        raise OpenAIError(
            503,
            f"the server is at capacity ({state.settings.max_in_flight} requests in flight); retry later",
            code="server_overloaded",
        )


def prompt_id_lists(state: FrontState, prompt) -> list[list[int]]:
    """A completion prompt as token ids: string, list of strings, token ids or lists of token ids."""
    if isinstance(prompt, str):
        prompts = [prompt]
    elif prompt and all(isinstance(p, int) for p in prompt):
        return [list(prompt)]
    else:
        prompts = list(prompt)
    if not prompts:
        raise OpenAIError(400, "prompt must not be empty", "prompt", "invalid_value")
    if all(isinstance(p, list) for p in prompts):
        return [list(p) for p in prompts]
    return [state.tokenizer.encode(p, add_special_tokens=True) for p in prompts]


def sampling_fields(
    state: FrontState, request: SamplingRequest, prompt_len: int, max_tokens: int | None, logprobs: int | None
) -> SamplingFields:
    settings = state.settings
    wanted = max_tokens if max_tokens is not None else settings.default_max_tokens
    if prompt_len == 0:
        raise OpenAIError(400, "the prompt has no tokens", "prompt", "invalid_value")
    if prompt_len + wanted > settings.context_length:
        if prompt_len >= settings.context_length or max_tokens is not None:
            raise OpenAIError(
                400,
                f"This model's maximum context length is {settings.context_length} tokens. However, you requested "
                f"{prompt_len + wanted} tokens ({prompt_len} in the prompt, {wanted} for the completion).",
                "max_tokens" if prompt_len < settings.context_length else "prompt",
                "context_length_exceeded",
            )
        wanted = settings.context_length - prompt_len  # the default shrinks to what fits
    vocab = getattr(state.tokenizer, "vocab_size", None)
    return SamplingFields(
        temperature=request.temperature,
        top_p=request.top_p,
        top_k=request.top_k,
        min_p=request.min_p,
        repetition_penalty=request.repetition_penalty,
        frequency_penalty=request.frequency_penalty,
        presence_penalty=request.presence_penalty,
        seed=request.seed,
        max_tokens=wanted,
        stop_token_ids=[t for t in request.stop_token_ids if vocab is None or t < vocab],
        ignore_eos=request.ignore_eos,
        logprobs=logprobs,
    )


def choice_seed(fields: SamplingFields, choice: int) -> SamplingFields:
    """n > 1 with a seed: each choice gets its own reproducible stream."""
    if fields.seed is None or choice == 0:
        return fields
    copy = SamplingFields(**{f: getattr(fields, f) for f in fields.__struct_fields__})
    copy.seed = fields.seed + choice
    return copy
