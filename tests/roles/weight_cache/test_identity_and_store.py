import os
import threading
import time

import pytest
import zmq

from roles.model_files import gguf_file
from roles.model_files.model_path import resolve_model_path
from roles.protocol import SamplingFields
from roles.scheduler.engine.core import Engine
from roles.scheduler.engine.settings import engine_config
from roles.scheduler.loading.from_file import load_model
from roles.scheduler.loading.from_shared_memory import load_shared_model
from roles.scheduler.loading.from_state import model_from_state
from roles.shared_weights.asking import WeightCacheUnavailable
from roles.shared_weights.identity import identity_of
from roles.shared_weights.segment import MappedSegment, segment_exists
from roles.shared_weights.store import WeightStore, load_answer
from tests.tiny_checkpoint import write_tiny_llama

DEADLINE_S = 60


@pytest.fixture
def tiny(tmp_path):
    return write_tiny_llama(tmp_path / "tiny")


def test_identity_names_file_state_mode_and_format(tiny):
    exact = identity_of(str(tiny), "exact")
    assert exact == identity_of(str(tiny), "exact")
    assert exact.key != identity_of(str(tiny), "int4").key
    os.utime(tiny / "config.json", ns=(time.time_ns(), time.time_ns() + 10**9))
    assert identity_of(str(tiny), "exact") != exact


def loaded(store: WeightStore, identity):
    """Start the store's load and wait (under a generous deadline) for its worker thread to report the end."""
    done = threading.Event()
    store.start_load(identity, lambda _: done.set())
    assert done.wait(DEADLINE_S), "the load did not finish"
    return store.lookup(identity)


@pytest.mark.parametrize("weight_dtype", ["auto", "exact", "int8", "int4"])
def test_model_around_the_stores_segment_decodes_like_one_loaded_from_disk(tiny, weight_dtype):
    """The daemon's side (convert, write a segment; no model built) and the scheduler's (map, build)."""
    store = WeightStore(f"roleserve-test-{os.getpid()}-")
    answer = loaded(store, identity_of(str(tiny), weight_dtype))
    try:
        assert answer.error is None, answer.error
        model, shape = load_model(str(tiny), weight_dtype=weight_dtype)
        mapped = MappedSegment(answer.segment)
        rebuilt = model_from_state(shape, model.weight_dtype, mapped.tensors(answer.tensors))
        assert answer.shape == shape.__dict__ and answer.eos_token_ids == sorted(model.eos_token_ids)
        params = SamplingFields(temperature=0, max_tokens=24, ignore_eos=True)
        config = engine_config(model_path=str(tiny), weight_dtype=weight_dtype, kv_cache_tokens=2048)
        prompts = [[5, 6, 7, 8], [40, 41]]
        ours = Engine(config, (model, shape)).generate(prompts, params)
        assert Engine(config, (rebuilt, shape)).generate(prompts, params) == ours
    finally:
        store.close()
    assert not segment_exists(answer.segment)


def test_a_load_that_ends_after_close_unlinks_its_segment(tiny):
    store = WeightStore(f"roleserve-test-{os.getpid()}-")
    identity = identity_of(str(tiny), "exact")
    store.close()
    assert loaded(store, identity) is None and store.entries == {}
    assert not segment_exists(f"roleserve-test-{os.getpid()}-{identity.key}")


def test_a_failed_load_is_reported_with_the_path(tmp_path):
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "config.json").write_text("{not json")
    answer = loaded(WeightStore("roleserve-test-"), identity_of(str(folder), "exact"))
    assert answer is not None and f"could not load {folder}" in answer.error


def test_store_detects_a_stale_file(tiny):
    store = WeightStore("roleserve-test-")
    identity = identity_of(str(tiny), "exact")
    assert store.check_current(identity) is None
    os.utime(tiny / "model.safetensors", ns=(time.time_ns(), time.time_ns() + 5 * 10**9))
    assert "changed on disk" in store.check_current(identity)


def test_a_daemon_that_is_down_is_reported_after_the_ping_timeout(tmp_path, tiny):
    """Not after the 900 s load timeout: the ping is answered within 5 s or the daemon counts as down."""
    outcome: list[BaseException] = []
    done = threading.Event()

    def ask_nobody() -> None:
        try:
            load_shared_model(zmq.Context.instance(), f"ipc://{tmp_path}/nobody", str(tiny), "exact")
        except BaseException as error:  # noqa: BLE001 (handed to the test thread)
            outcome.append(error)
        done.set()

    threading.Thread(target=ask_nobody, daemon=True).start()
    assert done.wait(DEADLINE_S), "asking a daemon that is down did not end"
    assert isinstance(outcome[0], WeightCacheUnavailable)
    assert "did not answer within 5s" in str(outcome[0])


def test_a_gguf_is_opened_once_for_shape_tensors_and_eos_ids(monkeypatch):
    opened = []
    original = gguf_file.GGUFFile.__init__
    gguf_file.forget_all()  # parsed by an earlier test in this process: count this load's parses

    def counting(self, path):
        opened.append(path)
        original(self, path)

    monkeypatch.setattr(gguf_file.GGUFFile, "__init__", counting)
    identity = identity_of(str(resolve_model_path("smollm2")), "auto")
    answer, segment, _ = load_answer(identity, f"roleserve-test-{os.getpid()}-")
    segment.close()
    segment.unlink()
    assert len(opened) == 1
    assert answer.eos_token_ids == [2]
