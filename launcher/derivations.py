"""Derivation rules the launcher applies at resolution: the built-in ones plus those that read the model file.

Reading a model's shape touches only its header (GGUF metadata or config.json), so `serve config show`
stays fast.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from roles.model_files.model_path import ModelFileError, is_gguf, resolve_model_path
from roles.model_files.model_shape import ModelShape
from runtime_context.derivation import BUILTIN_RULES, DerivationFailed, DerivationRule


@lru_cache(maxsize=8)
def read_model_shape(path: str) -> ModelShape:
    try:
        resolved = resolve_model_path(path)
        if is_gguf(resolved):
            from roles.model_files.gguf_checkpoint import GGUFCheckpoint

            return GGUFCheckpoint(resolved).shape()
        from roles.model_files.hf_config import hf_shape

        return hf_shape(resolved)
    except ModelFileError as error:
        raise DerivationFailed("model.path", str(error)) from None


def _kv_cache_tokens(values: Mapping[str, Any]) -> int:
    shape = read_model_shape(values["model.path"])
    page_size = values["memory.page_size"]
    element_bytes = 2 if values["memory.kv_cache_dtype"] == "float16" else 4
    tokens = values["memory.kv_cache_memory_mb"] * 2**20 // shape.kv_bytes_per_token(element_bytes)
    return max(2 * page_size, tokens // page_size * page_size)


CONTEXT_LENGTH_FROM_MODEL = DerivationRule(
    name="model_file_context_length",
    target="model.context_length",
    inputs=("model.context_length=0", "model.path"),
    applies=lambda values: values["model.context_length"] == 0,
    compute=lambda values: read_model_shape(values["model.path"]).context_length,
)


def _kv_cache_dtype(values: Mapping[str, Any]) -> str:
    from roles.scheduler.kv_cache.kv_dtype import derived_kv_dtype  # numpy and the GGUF reader: when needed

    try:
        return derived_kv_dtype(
            values["model.path"],
            values["exec.weight_dtype"],
            values["exec.kernel_isa"],
            values["exec.activation_dtype"],
        )
    except ModelFileError as error:
        raise DerivationFailed("model.path", str(error)) from None


# Before KV_TOKENS_FROM_BUDGET, which reads the element type it derives.
KV_DTYPE_FROM_WEIGHTS = DerivationRule(
    name="kv_dtype_from_rounding",
    target="memory.kv_cache_dtype",
    inputs=(
        "memory.kv_cache_dtype=auto",
        "exec.weight_dtype",
        "exec.kernel_isa",
        "exec.activation_dtype",
        "model.path",
        "cpu flags",
    ),
    applies=lambda values: values["memory.kv_cache_dtype"] == "auto",
    compute=_kv_cache_dtype,
)

KV_TOKENS_FROM_BUDGET = DerivationRule(
    name="kv_memory_budget",
    target="memory.kv_cache_tokens",
    inputs=(
        "memory.kv_cache_tokens=0",
        "memory.kv_cache_memory_mb",
        "memory.kv_cache_dtype",
        "memory.page_size",
        "model.path",
    ),
    applies=lambda values: values["memory.kv_cache_tokens"] == 0,
    compute=_kv_cache_tokens,
)

LAUNCHER_RULES = (*BUILTIN_RULES, CONTEXT_LENGTH_FROM_MODEL, KV_DTYPE_FROM_WEIGHTS, KV_TOKENS_FROM_BUDGET)
