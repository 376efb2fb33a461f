import dataclasses

import pytest

from roles.scheduler.engine.settings import engine_config, engine_config_from_context
from roles.scheduler.role import ROLE
from runtime_context import publish, resolve


def test_in_process_defaults_are_the_declared_ones():
    """Published with nothing set but the KV budget, the bags hold the declared defaults (but the thread
    count, which resolution derives from the CPUs)."""
    publish(
        resolve(sets=["memory.kv_cache_tokens=1024"], environ={}), role=ROLE.name, projection=ROLE.projection
    )
    from_bags = engine_config_from_context()
    config = engine_config(kv_cache_tokens=1024, page_size=8)
    assert config.kv_cache_tokens == 1024 and config.page_size == 8
    assert config.threads == 0  # declared: 0, the cores available
    # memory.kv_cache_dtype's declared auto is derived from the model file by the launcher (not here: no
    # launcher rules); in process without a model path it is float32
    assert from_bags.kv_cache_dtype == "auto" and config.kv_cache_dtype == "float32"
    assert config == dataclasses.replace(from_bags, page_size=8, threads=0, kv_cache_dtype="float32")


def test_the_server_path_reads_every_field_from_the_scheduler_bags():
    sets = ["memory.kv_cache_tokens=2048", "schedule.max_queued_requests=7", "exec.threads=1"]
    publish(resolve(sets=sets, environ={}), role=ROLE.name, projection=ROLE.projection)
    config = engine_config_from_context()
    assert (config.kv_cache_tokens, config.max_queued_requests, config.threads) == (2048, 7, 1)


def test_unknown_fields_and_a_missing_kv_budget_are_refused():
    with pytest.raises(TypeError, match=r"no fields \['max_batch'\]"):
        engine_config(kv_cache_tokens=1024, max_batch=3)
    with pytest.raises(TypeError):
        engine_config()  # type: ignore[call-arg]
