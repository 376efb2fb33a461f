"""What the tokenizer role serves, as `serve roles inspect` and /roles show it beside its settings: the tokenizer
kind, the pre-tokenizer, the vocabulary size and where the chat template came from, each with where it was read.

Read from the model's header (GGUF metadata, or the folder's tokenizer files) and the tokenizer.chat_template
setting, the same way whether the launcher asks before start or a running tokenizer process answers.
"""

from __future__ import annotations

import json
import pathlib

from roles.model_files.gguf_tokenizer import gguf_tokenizer_kind
from roles.model_files.hf_tokenizer import folder_tokenizer, read_json
from roles.model_files.model_path import ModelFileError, is_gguf, resolve_model_path
from roles.model_files.tokenizer_metadata import read_tokenizer_metadata
from roles.tokenizer.chat_template import ChatTemplateError
from roles.tokenizer.chat_template_source import (
    SETTING,
    ChatTemplates,
    folder_templates,
    gguf_templates,
    templates_from_setting,
)


def _fact(key: str, value, source: str) -> dict:
    return {"key": key, "value": value, "source": source}


def _gguf_facts(path: pathlib.Path) -> tuple[list[dict], ChatTemplates]:
    meta = read_tokenizer_metadata(path)
    kind = gguf_tokenizer_kind(meta, path)
    if kind.rules is None:
        pre = _fact("pre_tokenizer", "none (SentencePiece)", f"{path}: tokenizer.ggml.model")
    elif meta.model == "gemma4" or meta.pre is not None:
        pre = _fact(
            "pre_tokenizer", kind.pre, f"{path}: tokenizer.ggml.{'model' if meta.pre is None else 'pre'}"
        )
    else:
        pre = _fact("pre_tokenizer", kind.pre, f"{path}: no tokenizer.ggml.pre, llama.cpp's default rules")
    facts = [
        _fact("kind", kind.describe(), f"{path}: tokenizer.ggml.model"),
        pre,
        _fact("vocab_size", meta.vocab_size, f"{path}: tokenizer.ggml.tokens"),
    ]
    return facts, gguf_templates(meta.chat_template, meta.named_chat_templates, path)


def _pipeline_step(step: dict | None) -> str:
    """A tokenizer.json pipeline step by its type, a Sequence by its steps'."""
    if not step:
        return "none"
    inner = step.get("pretokenizers") or step.get("normalizers")
    return f"{step['type']}[{', '.join(_pipeline_step(s) for s in inner)}]" if inner else step["type"]


def _folder_facts(folder: pathlib.Path) -> tuple[list[dict], ChatTemplates]:
    path = folder / "tokenizer.json"
    try:
        pipeline = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ModelFileError(f"{path} is not a readable tokenizer: {error}") from error
    config = read_json(folder / "tokenizer_config.json")
    facts = [
        _fact("kind", f"{pipeline['model'].get('type', 'unknown')} (tokenizer.json)", f"{path}: model.type"),
        _fact("pre_tokenizer", _pipeline_step(pipeline.get("pre_tokenizer")), f"{path}: pre_tokenizer"),
        _fact("vocab_size", folder_tokenizer(folder, config).get_vocab_size(True), f"{path}: model.vocab"),
    ]
    return facts, folder_templates(folder, config)


def tokenizer_facts(model_path: str, chat_template: str | None) -> list[dict]:
    """[{"key", "value", "source"}] for inspect; a model or template that cannot be read says so instead."""
    try:
        resolved = resolve_model_path(model_path)
        facts, templates = _gguf_facts(resolved) if is_gguf(resolved) else _folder_facts(resolved)
        if chat_template is not None:
            templates = templates_from_setting(chat_template)
    except (ModelFileError, ChatTemplateError) as error:
        return [_fact("kind", None, f"unreadable: {error}")]
    if chat_template is not None:
        value = f"from the setting {SETTING}"
    else:
        value = "from the model" if templates.default or templates.named else "none"
    if templates.named:
        value += f" (also named: {', '.join(sorted(templates.named))})"
    return [*facts, _fact("chat_template", value, templates.origin)]
