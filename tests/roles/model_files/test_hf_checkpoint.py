"""HF Llama folders: ModelShape from config.json (rope_scaling kept), tensors from safetensors, clear errors."""

from __future__ import annotations

import json

import pytest
import torch

from roles.model_files.hf_checkpoint import HFCheckpoint
from roles.model_files.model_path import ModelFileError
from tests.tiny_checkpoint import write_tiny_llama


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    return write_tiny_llama(tmp_path_factory.mktemp("tiny_hf"))


def test_shape_from_config(tiny_folder):
    shape = HFCheckpoint(tiny_folder).shape()
    assert (shape.num_layers, shape.hidden_size, shape.num_heads, shape.num_kv_heads) == (2, 64, 4, 2)
    assert (shape.head_dim, shape.vocab_size, shape.intermediate_size) == (16, 320, 128)
    assert shape.tie_word_embeddings and shape.rope_theta == 10000.0
    assert shape.rope_scaling["rope_type"] == "llama3" and shape.rope_scaling["factor"] == 8.0


def test_classic_rope_keys_are_read_too(tmp_path):
    folder = write_tiny_llama(tmp_path / "tiny", rope_scaling=None)
    config = json.loads((folder / "config.json").read_text())
    config.pop("rope_parameters", None)
    config["rope_theta"] = 500000.0
    config["rope_scaling"] = {"type": "linear", "factor": 2.0}
    (folder / "config.json").write_text(json.dumps(config))
    shape = HFCheckpoint(folder).shape()
    assert shape.rope_theta == 500000.0 and shape.rope_scaling == {
        "type": "linear",
        "factor": 2.0,
        "rope_type": "linear",
    }


def test_tensors_are_float32(tiny_folder):
    checkpoint = HFCheckpoint(tiny_folder)
    assert "model.layers.1.mlp.down_proj.weight" in checkpoint.tensor_names()
    weight = checkpoint.tensor("model.layers.1.mlp.down_proj.weight")
    assert weight.dtype == torch.float32 and weight.shape == (64, 128)
    with pytest.raises(ModelFileError, match="missing"):
        checkpoint.tensor("nope")


def test_unsupported_model_type_is_named(tmp_path):
    folder = write_tiny_llama(tmp_path / "tiny")
    config = json.loads((folder / "config.json").read_text())
    config.update(model_type="gpt2", architectures=["GPT2LMHeadModel"])
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(
        ModelFileError, match=r"gpt2.*supported: LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM"
    ):
        HFCheckpoint(folder)


def test_corrupt_safetensors_names_the_file(tmp_path):
    folder = write_tiny_llama(tmp_path / "tiny")
    (folder / "model.safetensors").write_bytes(b"\x00garbage" * 50)
    with pytest.raises(ModelFileError, match=r"model\.safetensors"):
        HFCheckpoint(folder)


def test_corrupt_config_names_the_file(tmp_path):
    folder = write_tiny_llama(tmp_path / "tiny")
    (folder / "config.json").write_text("{not json")
    with pytest.raises(ModelFileError, match=r"config\.json"):
        HFCheckpoint(folder)
