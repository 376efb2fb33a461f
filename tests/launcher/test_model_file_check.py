"""A model file that cannot be served is refused by `serve config validate` and `serve` alike, before anything
starts: exit 2, naming the file, the tensor, its type or dims, and what is supported."""

from __future__ import annotations

import time

import pytest
from serve_command import run_serve

from roles.model_files.tensor_types import SUPPORTED_NAMES
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
