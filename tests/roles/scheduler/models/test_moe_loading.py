"""Loading mixture-of-experts folders: what is refused with a clear error, the route observer, and the int8 /
int4 modes on the experts (transformers parity: test_moe_parity)."""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import shutil
import threading

import pytest
import torch

from roles.model_files.model_path import ModelFileError
from roles.model_files.model_shape import ModelShape
from roles.scheduler.loading.from_file import load_model
from roles.scheduler.loading.from_state import model_from_state
from roles.scheduler.models.quantized_linear import Int4Linear, Int8Linear
from roles.scheduler.models.sparse_moe import SparseMoeBlock
from roles.shared_weights.identity import identity_of
from roles.shared_weights.segment import MappedSegment
from roles.shared_weights.store import WeightStore
from tests.moe_checkpoint import write_tiny_mixtral, write_tiny_qwen2_moe
from tests.paged_greedy import greedy_decode

PROMPTS = [[5, 17, 200, 3, 99, 42, 7], [31, 1, 2, 3], list(range(30, 70))]


@pytest.fixture(scope="module")
def mixtral_path(tmp_path_factory) -> str:
    return str(write_tiny_mixtral(tmp_path_factory.mktemp("mixtral")))


def test_an_unsupported_family_names_the_supported_ones(mixtral_path, tmp_path):
    folder = pathlib.Path(shutil.copytree(mixtral_path, tmp_path / "gpt2"))
    config = json.loads((folder / "config.json").read_text())
    config.update(model_type="gpt2", architectures=["GPT2LMHeadModel"])
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(
        ModelFileError,
        match=r"'gpt2'.*supported: LlamaForCausalLM, .*MixtralForCausalLM, Qwen2MoeForCausalLM",
    ):
        load_model(str(folder))


def test_qwen2_moe_with_dense_layers_is_refused(tmp_path):
    folder = write_tiny_qwen2_moe(tmp_path / "qwen", decoder_sparse_step=2)
    with pytest.raises(ModelFileError, match=r"decoder_sparse_step 2.*every layer must be sparse"):
        load_model(str(folder))


def test_the_route_observer_sees_every_layers_chosen_experts(mixtral_path):
    model, shape = load_model(mixtral_path)
    seen: list[tuple[int, tuple[int, ...]]] = []
    for layer in model.layers:
        assert isinstance(layer.moe, SparseMoeBlock)
        layer.moe.on_route = lambda index, ids: seen.append((index, tuple(ids.shape)))
    greedy_decode(model, shape, [PROMPTS[0]], 2)
    # The 7-token prefill, then one decode step, through both layers, top 2 of 4 experts each.
    assert seen == [(0, (7, 2)), (1, (7, 2)), (0, (1, 2)), (1, (1, 2))]


# Relative error of a sparse block's output against exact: measured 0.011-0.014 (int8) and 0.10-0.13 (int4,
# 4 bits per random Gaussian weight), then given margin. The router stays float32, so routes are the same.
MAX_RELATIVE_ERROR = {"int8": 0.03, "int4": 0.2}


@pytest.mark.parametrize("weight_dtype", ["int8", "int4"])
@pytest.mark.parametrize("family", ["mixtral", "qwen2_moe"])
def test_quantised_experts_stay_close_to_exact(mixtral_path, tmp_path, family, weight_dtype):
    path = mixtral_path if family == "mixtral" else str(write_tiny_qwen2_moe(tmp_path / "qwen"))
    exact, _ = load_model(path, "exact")
    quantised, _ = load_model(path, weight_dtype)
    expected_kind = {"int8": Int8Linear, "int4": Int4Linear}[weight_dtype]
    assert isinstance(quantised.layers[0].moe.experts[0].gate_up_proj, expected_kind)
    hidden = torch.randn(40, 64, generator=torch.Generator().manual_seed(0))
    for ours, reference in zip(quantised.layers, exact.layers, strict=True):
        with torch.inference_mode():
            expected, got = reference.moe(hidden), ours.moe(hidden)
        assert ((got - expected).norm() / expected.norm()).item() < MAX_RELATIVE_ERROR[weight_dtype]


@pytest.mark.parametrize("weight_dtype", ["auto", "int4"])
def test_a_moe_model_mapped_from_the_weight_cache_decodes_like_one_loaded_from_disk(tmp_path, weight_dtype):
    """The weight cache's segment carries every expert, the shared expert and the Q/K/V biases."""
    folder = str(write_tiny_qwen2_moe(tmp_path / "qwen"))
    store = WeightStore(f"roleserve-test-moe-{os.getpid()}-")
    done = threading.Event()
    identity = identity_of(folder, weight_dtype)
    store.start_load(identity, lambda _: done.set())
    try:
        assert done.wait(60), "the load did not finish"
        answer = store.lookup(identity)
        assert answer.error is None, answer.error
        model, shape = load_model(folder, weight_dtype)
        assert answer.shape == dataclasses.asdict(shape)
        mapped = MappedSegment(answer.segment)
        rebuilt = model_from_state(
            ModelShape(**answer.shape), model.weight_dtype, mapped.tensors(answer.tensors)
        )
        assert greedy_decode(rebuilt, shape, PROMPTS, 12) == greedy_decode(model, shape, PROMPTS, 12)
    finally:
        store.close()
