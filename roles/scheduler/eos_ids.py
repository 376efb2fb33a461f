"""Which token ids end a generation for a loaded model.

Preferred source: ``model.eos_token_ids`` (or ``model.eos_token_id``) if the model code sets it. Otherwise
read the checkpoint's own metadata: GGUF ``tokenizer.ggml.eos_token_id``; HF ``config.json`` and
``generation_config.json`` ``eos_token_id`` (an int or a list; chat models often list several).
"""

from __future__ import annotations

import json
import pathlib


def eos_token_ids(model, model_path: str | None) -> frozenset[int]:
    ids = getattr(model, "eos_token_ids", None)
    if ids is None and getattr(model, "eos_token_id", None) is not None:
        ids = [model.eos_token_id]
    if ids is None and model_path is not None:
        ids = _from_checkpoint(model_path)
    return frozenset(int(i) for i in ids or [])


def _from_checkpoint(model_path: str) -> list[int]:
    from roles.model_files.model_path import is_gguf, resolve_model_path

    resolved = resolve_model_path(model_path)
    if is_gguf(resolved):
        from roles.model_files.gguf_checkpoint import GGUFCheckpoint

        value = GGUFCheckpoint(resolved).field("tokenizer.ggml.eos_token_id")
        return [] if value is None else [int(value)]
    ids: list[int] = []
    for name in ("config.json", "generation_config.json"):
        file = pathlib.Path(resolved) / name
        if file.is_file():
            value = json.loads(file.read_text()).get("eos_token_id")
            ids.extend(value if isinstance(value, list) else [] if value is None else [value])
    return ids
