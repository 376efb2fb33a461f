"""A model file that cannot be served is refused by `serve config validate` and `serve` alike, before anything
starts: exit 2, naming the file, the tensor, its type or dims, and what is supported."""

from __future__ import annotations

import json
import time

import pytest
from serve_command import run_serve

from roles.model_files.tensor_types import SUPPORTED_NAMES
from tests.family_checkpoints import write_family_checkpoint
from tests.kquant_checkpoint import LAYER_TYPES, write_kquant_llama


def _layers(**changes):
    """LAYER_TYPES with layer 1's tensors changed (a type name, or None to leave the tensor out)."""
    layers = [dict(types) for types in LAYER_TYPES]
    for leaf, type_name in changes.items():
        if type_name is None:
            del layers[1][leaf]
        else:
            layers[1][leaf] = type_name
    return layers


def test_a_file_mixing_every_supported_type_is_valid(tmp_path):
    result = run_serve("config", "validate", "--model", str(write_kquant_llama(tmp_path / "mixed.gguf")))
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("command", [("config", "validate"), ()])
def test_a_tensor_of_an_unsupported_type_is_refused_before_start(tmp_path, command):
    path = write_kquant_llama(tmp_path / "iq2.gguf", _layers(attn_q="IQ2_XXS"))
    started = time.monotonic()
    result = run_serve(*command, "--model", str(path))
    assert result.returncode == 2
    assert f"{path}: tensor 'blk.1.attn_q.weight' has type IQ2_XXS, which is not supported" in result.stderr
    assert f"(supported: {', '.join(SUPPORTED_NAMES)})" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert time.monotonic() - started < 30  # refused at validation, not after the roles started


def test_a_missing_tensor_is_named(tmp_path):
    path = write_kquant_llama(tmp_path / "holes.gguf", _layers(ffn_down=None))
    result = run_serve("config", "validate", "--model", str(path))
    assert result.returncode == 2
    assert f"{path}: tensor 'blk.1.ffn_down.weight' is missing" in result.stderr


def test_dims_that_disagree_with_the_metadata_are_named(tmp_path):
    path = write_kquant_llama(tmp_path / "dims.gguf", dims={"attn_k": (256, 256)})
    result = run_serve("config", "validate", "--model", str(path))
    assert result.returncode == 2
    assert "tensor 'blk.0.attn_k.weight' has dims [256, 256]; the model's metadata implies [256, 128]" in (
        result.stderr
    )


def _without_tensor(folder, name: str) -> None:
    from safetensors.torch import load_file, save_file

    weights = load_file(folder / "model.safetensors")
    del weights[name]
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})


def test_a_folder_missing_a_tensor_its_family_reads_is_refused_before_start(tmp_path):
    folder = write_family_checkpoint("gemma3", tmp_path / "gemma3")
    _without_tensor(folder, "model.layers.5.post_feedforward_layernorm.weight")
    result = run_serve("config", "validate", "--model", str(folder))
    assert result.returncode == 2
    assert (
        f"{folder}: tensor 'model.layers.5.post_feedforward_layernorm.weight' is missing from every *.safetensors "
        "file (the gemma3 family reads it)"
    ) in result.stderr


def test_a_config_missing_a_field_its_family_reads_is_refused_before_start(tmp_path):
    folder = write_family_checkpoint("qwen3_moe", tmp_path / "qwen3_moe")
    config = json.loads((folder / "config.json").read_text())
    del config["moe_intermediate_size"]
    (folder / "config.json").write_text(json.dumps(config))
    result = run_serve("config", "validate", "--model", str(folder))
    assert result.returncode == 2
    assert f"{folder}/config.json: missing field 'moe_intermediate_size' (the qwen3_moe family reads it)" in (
        result.stderr
    )
    assert "Traceback" not in result.stderr + result.stdout


def test_an_unsupported_architecture_names_the_supported_ones(tmp_path):
    folder = write_family_checkpoint("qwen3", tmp_path / "gpt2")
    config = json.loads((folder / "config.json").read_text())
    config.update(model_type="gpt2", architectures=["GPT2LMHeadModel"])
    (folder / "config.json").write_text(json.dumps(config))
    result = run_serve("config", "validate", "--model", str(folder))
    assert result.returncode == 2
    assert "architectures ['GPT2LMHeadModel'] / model_type 'gpt2' are not supported" in result.stderr
    assert "Gemma3ForCausalLM, Phi3ForCausalLM" in result.stderr
