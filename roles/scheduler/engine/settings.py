"""The engine's settings: read through the scheduler role's published bags in the server (never the raw
record), or taken from the declarations for in-process use (tests, benchmarks)."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from roles.scheduler.engine.core import EngineConfig
from runtime_context import get_exec, get_memory, get_model, get_schedule
from runtime_context.settings import SETTINGS

# Each EngineConfig field and the one setting it comes from.
SETTING_OF_FIELD = {
    "model_path": "model.path",
    "weight_dtype": "exec.weight_dtype",
    "threads": "exec.threads",
    "max_running_requests": "schedule.max_running_requests",
    "max_queued_requests": "schedule.max_queued_requests",
    "chunked_prefill_size": "schedule.chunked_prefill_size",
    "kv_cache_tokens": "memory.kv_cache_tokens",
    "page_size": "memory.page_size",
    "enable_prefix_cache": "memory.prefix_cache",
}
assert set(SETTING_OF_FIELD) == {f.name for f in fields(EngineConfig)}


def engine_config_from_context() -> EngineConfig:
    model, execution, schedule, memory = get_model(), get_exec(), get_schedule(), get_memory()
    return EngineConfig(
        model_path=model.path,
        weight_dtype=execution.weight_dtype,
        threads=execution.threads,
        max_running_requests=schedule.max_running_requests,
        max_queued_requests=schedule.max_queued_requests,
        chunked_prefill_size=schedule.chunked_prefill_size,
        kv_cache_tokens=memory.kv_cache_tokens,
        page_size=memory.page_size,
        enable_prefix_cache=memory.prefix_cache,
    )


def engine_config(*, kv_cache_tokens: int, **fields_given: Any) -> EngineConfig:
    """In-process use: the given fields, every other at its declared default. Given values are taken as
    they are (tests use shapes the declared bounds refuse); the engine checks what it depends on.

    kv_cache_tokens is required: its declared default (0) means "derive from the memory budget", which the
    launcher does at resolution.
    """
    unknown = sorted(set(fields_given) - set(SETTING_OF_FIELD))
    if unknown:
        raise TypeError(f"EngineConfig has no fields {unknown}")
    given = {"kv_cache_tokens": kv_cache_tokens, **fields_given}
    values = {
        name: given[name] if name in given else SETTINGS[key].default
        for name, key in SETTING_OF_FIELD.items()
    }
    return EngineConfig(**values)
