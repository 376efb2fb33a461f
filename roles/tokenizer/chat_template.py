"""Render a chat template in a Jinja sandbox exactly as transformers' ``apply_chat_template`` renders it.

The same environment and helpers (chat_template_sandbox.py, imported by the first template compiled) and the
same variables: ``messages`` with None-valued keys dropped and the reasoning aliased as
``reasoning_content``/``thinking``, ``tools`` and ``documents`` (None when absent), ``add_generation_prompt``
and the special tokens (``bos_token``, ``eos_token``, ...).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache

_REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")


class ChatTemplateError(ValueError):
    """The template is missing, malformed, or rejected the conversation via raise_exception()."""


@lru_cache(maxsize=16)
def compile_chat_template(source: str):
    """The compiled template (a jinja2.Template); ChatTemplateError when it does not compile. Jinja is
    imported here, by the first template compiled, not with this module: a front is ready without it."""
    import jinja2

    from roles.tokenizer.chat_template_sandbox import sandbox_environment

    try:
        return sandbox_environment().from_string(source)
    except jinja2.TemplateError as error:
        raise ChatTemplateError(f"does not compile: {error}") from error


def _template_messages(messages: list[dict]) -> list[dict]:
    """Messages as transformers hands them over: keys whose value is None dropped, a reasoning text under
    every name templates read it by."""
    shaped = []
    for message in messages:
        message = {key: value for key, value in message.items() if value is not None}
        reasoning = next((message[key] for key in _REASONING_FIELDS if message.get(key) is not None), None)
        if reasoning is not None:
            message = {"thinking": reasoning, **message, "reasoning_content": reasoning}
        shaped.append(message)
    return shaped


def render_chat_template(
    source: str | None,
    messages: list[dict],
    add_generation_prompt: bool = True,
    special_tokens: Mapping[str, str] | None = None,
    tools: list[dict] | None = None,
    **extra,
) -> str:
    """The prompt text for ``messages`` (dicts with "role", "content", ...); ``special_tokens`` maps
    bos_token, eos_token, ... to their text, as transformers' special_tokens_map."""
    if not source:
        raise ChatTemplateError("this model has no chat template; send a plain completion prompt instead")
    import jinja2

    template = compile_chat_template(source)
    variables = {**(special_tokens or {}), **extra}
    try:
        return template.render(
            messages=_template_messages(messages),
            tools=tools,
            documents=variables.pop("documents", None),
            add_generation_prompt=add_generation_prompt,
            **variables,
        )
    except jinja2.TemplateError as error:
        raise ChatTemplateError(str(error)) from error
    except Exception as error:  # a template is a program: its own faults (1 + "a", a missing key) end here
        raise ChatTemplateError(f"{type(error).__name__}: {error}") from error
