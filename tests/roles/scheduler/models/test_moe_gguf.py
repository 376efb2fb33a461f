"""A Mixtral GGUF in llama.cpp's layout (stacked experts) decodes like the same weights as an HF folder."""

from __future__ import annotations

import dataclasses

import pytest

from roles.model_files.gguf_checkpoint import GGUFCheckpoint
from roles.model_files.tensor_types import BY_NAME
from roles.scheduler.loading.from_file import load_model
from tests.moe_checkpoint import write_mixtral_gguf, write_tiny_mixtral
from tests.paged_greedy import greedy_decode

PROMPTS = [[5, 17, 200, 3, 99, 42, 7], [250], [31, 1, 2, 3], list(range(30, 90))]
NEW_TOKENS = 24


@pytest.fixture(scope="module")
def mixtral(tmp_path_factory):
    """(HF folder, the folder's greedy continuations in exact mode)."""
    folder = write_tiny_mixtral(tmp_path_factory.mktemp("mixtral") / "hf")
    model, shape = load_model(str(folder), "exact")
    return folder, greedy_decode(model, shape, PROMPTS, NEW_TOKENS, page_size=8, prefill_chunk=16)


def test_the_gguf_reads_as_mixtral_with_the_folders_shape(mixtral, tmp_path):
    folder, _ = mixtral
    gguf_shape = GGUFCheckpoint(write_mixtral_gguf(folder, tmp_path / "mixtral.gguf")).shape()
    _, folder_shape = load_model(str(folder), "exact")
    assert (gguf_shape.architecture, gguf_shape.num_experts, gguf_shape.experts_per_token) == (
        "mixtral",
        4,
        2,
    )
    # GGUF metadata holds the epsilon as float32.
    assert gguf_shape.rms_norm_eps == pytest.approx(folder_shape.rms_norm_eps, rel=1e-6)
    assert dataclasses.replace(gguf_shape, rms_norm_eps=folder_shape.rms_norm_eps) == folder_shape


@pytest.mark.parametrize("weight_dtype", ["exact", "auto"])
def test_float_gguf_decodes_like_the_hf_folder(mixtral, tmp_path, weight_dtype):
    folder, expected = mixtral
    model, shape = load_model(str(write_mixtral_gguf(folder, tmp_path / "mixtral.gguf")), weight_dtype)
    assert greedy_decode(model, shape, PROMPTS, NEW_TOKENS, page_size=8, prefill_chunk=16) == expected


def test_q8_0_experts_run_their_own_blocks_in_auto_like_their_float_values_in_exact(mixtral, tmp_path):
    """auto runs each expert's slice of the stacked Q8_0 blocks on the kernels; exact dequantises them."""
    folder, _ = mixtral
    path = str(write_mixtral_gguf(folder, tmp_path / "mixtral-q8.gguf", expert_type="Q8_0"))
    auto, shape = load_model(path, "auto")
    assert type(auto.layers[0].moe.experts[3].down_proj).__name__ == "BlockLinear"
    exact, _ = load_model(path, "exact")
    assert greedy_decode(auto, shape, PROMPTS, NEW_TOKENS) == greedy_decode(exact, shape, PROMPTS, NEW_TOKENS)


def test_k_quant_experts_run_their_own_blocks_in_auto_like_their_float_values_in_exact(tmp_path):
    """Q4_K gate/up and Q6_K-wide experts need 256-wide rows: a wider Mixtral, its experts in K-quant blocks."""
    folder = write_tiny_mixtral(tmp_path / "hf", hidden_size=256, intermediate_size=256)
    for expert_type in ("Q4_K", "Q6_K"):
        path = str(
            write_mixtral_gguf(folder, tmp_path / f"mixtral-{expert_type}.gguf", expert_type=expert_type)
        )
        auto, shape = load_model(path, "auto")
        assert auto.layers[1].moe.experts[2].gate_up_proj.part_types == [BY_NAME[expert_type].type_id] * 2
        exact, _ = load_model(path, "exact")
        assert greedy_decode(auto, shape, PROMPTS, NEW_TOKENS) == greedy_decode(
            exact, shape, PROMPTS, NEW_TOKENS
        )
