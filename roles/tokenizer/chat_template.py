"""Render a chat template in a Jinja sandbox exactly as transformers' ``apply_chat_template`` renders it.

The same environment (trim_blocks, lstrip_blocks, loop controls, the ``{% generation %}`` tag), the same
helpers (``raise_exception``, ``strftime_now``, ``tojson`` with its arguments, a ``dict`` and a
``namespace`` that refuse dunder names) and the same variables: ``messages`` with None-valued keys dropped
and the reasoning aliased as ``reasoning_content``/``thinking``, ``tools`` and ``documents`` (None when
absent), ``add_generation_prompt`` and the special tokens (``bos_token``, ``eos_token``, ...).
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping
from functools import lru_cache

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment

_REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")


class ChatTemplateError(ValueError):
    """The template is missing, malformed, or rejected the conversation via raise_exception()."""


class _GenerationTag(Extension):
    """``{% generation %}...{% endgeneration %}`` marks the assistant's text for training masks; rendering
    keeps its body as is."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.CallBlock(self.call_method("_keep"), [], [], body).set_lineno(lineno)

    def _keep(self, caller):
        return caller()


def _raise_exception(message: str):
    raise jinja2.TemplateError(message)


def _tojson(value, ensure_ascii=False, indent=None, separators=None, sort_keys=False) -> str:
    # jinja2's own tojson HTML-escapes; chat templates want plain JSON.
    return json.dumps(
        value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )


def _strftime_now(format_string: str) -> str:
    return datetime.datetime.now().strftime(format_string)


class _TemplateDict:
    """``dict(...)`` and ``dict.fromkeys(...)`` without the type itself."""

    def __call__(self, *args, **kwargs):
        return dict(*args, **kwargs)

    def fromkeys(self, *args, **kwargs):
        return dict.fromkeys(*args, **kwargs)


class _TemplateNamespace(jinja2.utils.Namespace):
    """A namespace that takes no underscore-prefixed names (no way to CPython's internals)."""

    def __init__(*args, **kwargs):
        self, args = args[0], args[1:]
        attrs = dict(*args, **kwargs)
        for name in attrs:
            _TemplateNamespace._check_name(name)
        jinja2.utils.Namespace.__init__(self, attrs)

    def __setitem__(self, name, value):
        _TemplateNamespace._check_name(name)
        jinja2.utils.Namespace.__setitem__(self, name, value)

    @staticmethod
    def _check_name(name):
        if isinstance(name, str) and name.startswith("_"):
            raise jinja2.exceptions.SecurityError(f"chat templates cannot set {name!r} on a namespace")


@lru_cache(maxsize=16)
def compile_chat_template(source: str) -> jinja2.Template:
    """The compiled template; ChatTemplateError when it does not compile."""
    environment = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[_GenerationTag, "jinja2.ext.loopcontrols"]
    )
    environment.filters["tojson"] = _tojson
    environment.globals["raise_exception"] = _raise_exception
    environment.globals["strftime_now"] = _strftime_now
    environment.globals["dict"] = _TemplateDict()
    environment.globals["namespace"] = _TemplateNamespace
    try:
        return environment.from_string(source)
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
