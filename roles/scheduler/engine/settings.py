"""The engine's settings: read through the scheduler role's published bags in the server (never the raw
record), or taken from the declarations for in-process use (tests, benchmarks). Each field is named with
its setting once, in ``_engine_config``."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from roles.scheduler.engine.core import EngineConfig
from roles.scheduler.kv_cache.kv_dtype import derived_kv_dtype
from runtime_context import published_leaves
from runtime_context.settings import SETTINGS


def _engine_config(read: Mapping[str, Any]) -> EngineConfig:
    """Every field from its setting's key."""
    return EngineConfig(
        model_path=read["model.path"],
        weight_dtype=read["exec.weight_dtype"],
        kernel_isa=read["exec.kernel_isa"],
        activation_dtype=read["exec.activation_dtype"],
        threads=read["exec.threads"],
        max_running_requests=read["schedule.max_running_requests"],
        max_queued_requests=read["schedule.max_queued_requests"],
        chunked_prefill_size=read["schedule.chunked_prefill_size"],
        kv_cache_tokens=read["memory.kv_cache_tokens"],
        kv_cache_dtype=read["memory.kv_cache_dtype"],
        page_size=read["memory.page_size"],
        enable_prefix_cache=read["memory.prefix_cache"],
        speculative_method=read["exec.speculative_method"],
        speculative_num_draft_tokens=read["exec.speculative_num_draft_tokens"],
        speculative_ngram_min=read["exec.speculative_ngram_min"],
        speculative_ngram_max=read["exec.speculative_ngram_max"],
        speculative_draft_model=read["exec.speculative_draft_model"],
    )


def engine_config_from_context() -> EngineConfig:
    return _engine_config(published_leaves)


_DECLARED = {key: setting.default for key, setting in SETTINGS.items()}


def engine_config(*, kv_cache_tokens: int, **fields_given: Any) -> EngineConfig:
    """In-process use: the given fields, every other at its declared default. Given values are taken as
    they are (tests use shapes the declared bounds refuse); the engine checks what it depends on.

    kv_cache_tokens is required: its declared default (0) means "derive from the memory budget", which the
    launcher does at resolution. memory.kv_cache_dtype's declared auto is the launcher's to derive too: here,
    unless given, it is derived alike (roles.scheduler.kv_cache.kv_dtype) where model_path is given, and is
    float32 where it is not (the engine is then handed a loaded model, whose file this does not read).
    """
    unknown = sorted(set(fields_given) - {field.name for field in dataclasses.fields(EngineConfig)})
    if unknown:
        raise TypeError(f"EngineConfig has no fields {unknown}")
    config = dataclasses.replace(_engine_config(_DECLARED), kv_cache_tokens=kv_cache_tokens, **fields_given)
    if "kv_cache_dtype" in fields_given:
        return config
    kv_dtype = "float32"
    if "model_path" in fields_given:
        kv_dtype = derived_kv_dtype(
            config.model_path, config.weight_dtype, config.kernel_isa, config.activation_dtype
        )
    return dataclasses.replace(config, kv_cache_dtype=kv_dtype)
