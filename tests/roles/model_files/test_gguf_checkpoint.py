"""GGUF reading: shape metadata, tensors, the Q/K un-permutation, tokenizer metadata and clear errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from roles.model_files.gguf_checkpoint import GGUFCheckpoint, unpermute_rope_rows
from roles.model_files.model_path import ModelFileError, resolve_model_path
from tests.roles.model_files.gguf_fixtures import write_small_gguf


@pytest.fixture(scope="module")
def smollm2():
    return GGUFCheckpoint(resolve_model_path("smollm2"))


def test_shape_of_default_model(smollm2):
    shape = smollm2.shape()
    assert (shape.num_layers, shape.hidden_size, shape.intermediate_size) == (30, 576, 1536)
    assert (shape.num_heads, shape.num_kv_heads, shape.head_dim, shape.vocab_size) == (9, 3, 64, 49152)
    assert shape.rope_theta == 100000.0 and shape.tie_word_embeddings and shape.rope_scaling is None


def test_tensors_come_back_float32_in_torch_layout(smollm2):
    names = smollm2.hf_tensor_names()
    assert len(names) == 30 * 9 + 2  # 9 tensors per layer + embedding + final norm (tied head)
    k_proj = smollm2.tensor(names["model.layers.0.self_attn.k_proj.weight"])
    assert k_proj.dtype == torch.float32 and k_proj.shape == (192, 576)
    raw = smollm2.raw_tensor(names["model.layers.0.self_attn.k_proj.weight"])
    assert (raw.type_name, raw.rows, raw.cols, raw.blocks.shape) == ("Q4_1", 192, 576, (192, 18 * 20))


def _llama_cpp_permute(rows: np.ndarray, heads: int) -> np.ndarray:
    """What llama.cpp's converter does to Q/K rows: per head, halves (2, D/2) -> interleaved (D/2, 2)."""
    return (
        rows.reshape(heads, 2, rows.shape[0] // heads // 2, *rows.shape[1:])
        .swapaxes(1, 2)
        .reshape(rows.shape)
    )


def test_unpermute_inverts_llama_cpp_permutation():
    weight = np.arange(4 * 8 * 3, dtype=np.float32).reshape(4 * 8, 3)
    permuted = _llama_cpp_permute(weight, heads=4)
    assert np.array_equal(unpermute_rope_rows(permuted, 4), weight)
    assert torch.equal(unpermute_rope_rows(torch.from_numpy(permuted), 4), torch.from_numpy(weight))


def test_tokenizer_metadata(smollm2):
    meta = smollm2.tokenizer_metadata()
    assert len(meta.tokens) == 49152 and len(meta.merges) > 40000
    assert meta.model == "gpt2" and meta.pre == "smollm"
    assert (meta.bos_token_id, meta.eos_token_id, meta.pad_token_id) == (1, 2, 2)
    assert meta.tokens[1] == "<|im_start|>" and meta.token_types[1] == 3
    assert "<|im_start|>" in meta.chat_template and meta.add_bos_token is False


def test_garbage_file_names_the_file(tmp_path):
    path = tmp_path / "garbage.gguf"
    path.write_bytes(b"this is not a gguf file at all" * 100)
    with pytest.raises(ModelFileError, match="garbage.gguf"):
        GGUFCheckpoint(path)


def test_truncated_file_names_the_file(tmp_path):
    path = tmp_path / "truncated.gguf"
    with open(resolve_model_path("smollm2"), "rb") as source:
        path.write_bytes(source.read(3_000_000))
    with pytest.raises(ModelFileError, match="truncated.gguf"):
        GGUFCheckpoint(path)


def test_unsupported_architecture_is_named(tmp_path):
    path = write_small_gguf(tmp_path / "gpt2.gguf", architecture="gpt2")
    with pytest.raises(ModelFileError, match=r"gpt2\.gguf.*'gpt2'.*supported: llama"):
        GGUFCheckpoint(path)


def test_unsupported_quant_type_names_tensor_and_types(tmp_path):
    checkpoint = GGUFCheckpoint(write_small_gguf(tmp_path / "mxfp4.gguf", quant_type="MXFP4"))
    for read in (checkpoint.tensor, checkpoint.raw_tensor):
        with pytest.raises(ModelFileError, match=r"mxfp4\.gguf.*blk\.0\.attn_q\.weight.*MXFP4.*Q4_K"):
            read("blk.0.attn_q.weight")


def test_small_f32_file_reads(tmp_path):
    checkpoint = GGUFCheckpoint(write_small_gguf(tmp_path / "ok.gguf"))
    assert checkpoint.shape().num_kv_heads == 1
    assert checkpoint.tensor("blk.0.attn_q.weight").shape == (32, 32)
