"""The engine's settings, read through the scheduler role's published bags (never the raw record)."""

from __future__ import annotations

from roles.scheduler.engine import EngineConfig
from runtime_context import get_exec, get_memory, get_model, get_schedule


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
