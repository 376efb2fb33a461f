"""Checks the served model's tokenizer and the tokenizer.chat_template setting before anything starts.

A GGUF file must name a tokenizer model and pre-tokenizer we cut text for exactly (never a fallback to
other rules: a wrong split changes every answer while looking fine), a folder must hold a tokenizer.json
the tokenizers library loads, and a chat template given by the setting must exist and compile. Each
problem names the file, the key, the value and what is supported; `serve` then exits 2.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from roles.model_files.gguf_tokenizer import gguf_tokenizer_kind
from roles.model_files.hf_tokenizer import folder_tokenizer
from roles.model_files.model_path import ModelFileError, is_gguf, resolve_model_path
from roles.model_files.tokenizer_metadata import read_tokenizer_metadata
from roles.tokenizer.chat_template import ChatTemplateError
from roles.tokenizer.chat_template_source import templates_from_setting
from runtime_context.constraints import Constraint


@lru_cache(maxsize=8)
def tokenizer_problem(model_path: str) -> str | None:
    try:
        resolved = resolve_model_path(model_path)
    except ModelFileError:
        return None  # an unusable path is reported where the model is read, with its own reason
    try:
        if is_gguf(resolved):
            gguf_tokenizer_kind(read_tokenizer_metadata(resolved), resolved)
        else:
            folder_tokenizer(resolved)
    except ModelFileError as error:
        return str(error)
    return None


def chat_template_problem(value: str | None) -> str | None:
    if value is None:
        return None
    try:
        templates_from_setting(value)
    except ChatTemplateError as error:
        return str(error)
    return None


def _model_problem(values: Mapping[str, Any]) -> str | None:
    return tokenizer_problem(values["model.path"])


TOKENIZER_SUPPORTED = Constraint(
    ("model.path",),
    lambda values: _model_problem(values) is None,
    lambda values: f"its tokenizer cannot be served: {_model_problem(values)}",
)

CHAT_TEMPLATE_USABLE = Constraint(
    ("tokenizer.chat_template",),
    lambda values: chat_template_problem(values["tokenizer.chat_template"]) is None,
    lambda values: str(chat_template_problem(values["tokenizer.chat_template"])),
)
