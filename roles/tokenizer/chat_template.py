"""Render a checkpoint's Jinja chat template in a sandbox, with the helpers HF-style templates expect."""

from __future__ import annotations

import datetime
import json
from functools import lru_cache

from jinja2 import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment


class ChatTemplateError(ValueError):
    """The template is missing, malformed, or rejected the conversation via raise_exception()."""


def _raise_exception(message: str):
    raise ChatTemplateError(message)


def _tojson(value, indent=None, ensure_ascii=False, separators=None, sort_keys=False) -> str:
    # jinja2's own tojson HTML-escapes; chat templates want plain JSON.
    return json.dumps(
        value, indent=indent, ensure_ascii=ensure_ascii, separators=separators, sort_keys=sort_keys
    )


def _strftime_now(format_string: str) -> str:
    return datetime.datetime.now().strftime(format_string)


@lru_cache(maxsize=8)
def _compile(source: str):
    # trim_blocks / lstrip_blocks: the whitespace rules HF templates are written for.
    environment = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"]
    )
    environment.filters["tojson"] = _tojson
    environment.globals["raise_exception"] = _raise_exception
    environment.globals["strftime_now"] = _strftime_now
    try:
        return environment.from_string(source)
    except TemplateError as error:
        raise ChatTemplateError(f"chat template does not compile: {error}") from error


def render_chat_template(
    source: str | None,
    messages: list[dict],
    add_generation_prompt: bool = True,
    bos_token: str | None = None,
    eos_token: str | None = None,
    **extra,
) -> str:
    """The prompt text for ``messages`` (list of {"role", "content"} dicts)."""
    if not source:
        raise ChatTemplateError("this model has no chat template; send a plain completion prompt instead")
    template = _compile(source)
    try:
        return template.render(
            messages=messages,
            add_generation_prompt=add_generation_prompt,
            bos_token=bos_token or "",
            eos_token=eos_token or "",
            **extra,
        )
    except ChatTemplateError:
        raise
    except TemplateError as error:
        raise ChatTemplateError(f"chat template failed: {error}") from error
