import os
import time

import pytest
import zmq

from roles.protocol import SamplingFields
from roles.scheduler.engine import Engine, EngineConfig
from roles.scheduler.models.llama import load_model
from roles.scheduler.models.model_state import model_from_state, model_state
from roles.weight_cache.client import WeightCacheUnavailable, load_shared_model
from roles.weight_cache.identity import identity_of
from roles.weight_cache.store import WeightStore
from tests.tiny_checkpoint import write_tiny_llama


@pytest.fixture
def tiny(tmp_path):
    return write_tiny_llama(tmp_path / "tiny")


def test_identity_names_file_state_mode_and_format(tiny):
    exact = identity_of(str(tiny), "exact")
    assert exact == identity_of(str(tiny), "exact")
    assert exact.key != identity_of(str(tiny), "int4").key
    os.utime(tiny / "config.json", ns=(time.time_ns(), time.time_ns() + 10**9))
    assert identity_of(str(tiny), "exact") != exact


@pytest.mark.parametrize("weight_dtype", ["auto", "exact", "int8", "int4"])
def test_model_rebuilt_from_converted_state_decodes_identically(tiny, weight_dtype):
    model, shape = load_model(str(tiny), weight_dtype=weight_dtype)
    rebuilt = model_from_state(shape, weight_dtype, {k: v.clone() for k, v in model_state(model).items()})
    params = SamplingFields(temperature=0, max_tokens=24, ignore_eos=True)
    config = EngineConfig(model_path=str(tiny), weight_dtype=weight_dtype, kv_cache_tokens=2048)
    prompts = [[5, 6, 7, 8], [40, 41]]
    ours = Engine(config, (model, shape)).generate(prompts, params)
    assert Engine(config, (rebuilt, shape)).generate(prompts, params) == ours


def test_rebuild_refuses_state_of_another_shape(tiny):
    model, shape = load_model(str(tiny))
    state = model_state(model)
    state.pop(next(iter(state)))
    with pytest.raises(ValueError, match="cached weights do not fit the model: missing"):
        model_from_state(shape, "exact", state)


def test_store_detects_a_stale_file(tiny):
    store = WeightStore("roleserve-test-")
    identity = identity_of(str(tiny), "exact")
    assert store.check_current(identity) is None
    os.utime(tiny / "model.safetensors", ns=(time.time_ns(), time.time_ns() + 5 * 10**9))
    assert "changed on disk" in store.check_current(identity)


def test_a_daemon_that_is_down_is_reported_quickly(tmp_path, tiny):
    started = time.monotonic()
    with pytest.raises(WeightCacheUnavailable, match="did not answer within 5s"):
        load_shared_model(zmq.Context.instance(), f"ipc://{tmp_path}/nobody", str(tiny), "exact")
    assert time.monotonic() - started < 10
