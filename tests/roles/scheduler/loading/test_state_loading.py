"""The model is built from its ModelShape, then the converted tensors are loaded into it; a tensor that is
missing, unexpected or of another shape is refused by name."""

from __future__ import annotations

import pytest
import torch

from roles.scheduler.loading.from_state import model_from_state
from roles.weight_format.execution_format import load_execution_weights
from tests.tiny_checkpoint import write_tiny_llama


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    return load_execution_weights(str(write_tiny_llama(tmp_path_factory.mktemp("tiny"))), "exact")


def test_the_model_holds_the_given_tensors_themselves(converted):
    model = model_from_state(converted.shape, "exact", converted.state)
    held = dict(model.named_parameters())
    assert held.keys() == converted.state.keys()
    assert all(held[name].data_ptr() == tensor.data_ptr() for name, tensor in converted.state.items())
    assert not any(p.is_meta for p in model.parameters())


def test_a_missing_tensor_is_named(converted):
    state = dict(converted.state)
    del state["layers.1.input_norm"]
    with pytest.raises(ValueError, match=r"missing tensors \['layers.1.input_norm'\]"):
        model_from_state(converted.shape, "exact", state)


def test_an_unexpected_tensor_is_named(converted):
    state = {**converted.state, "layers.0.extra": torch.zeros(3)}
    with pytest.raises(ValueError, match=r"unexpected tensors \['layers.0.extra'\]"):
        model_from_state(converted.shape, "exact", state)


def test_a_tensor_of_another_shape_is_named_with_both_shapes(converted):
    state = dict(converted.state)
    rows, cols = state["layers.0.down_proj.weight"].shape
    state["layers.0.down_proj.weight"] = torch.zeros(rows, cols + 1)
    expected = rf"'layers.0.down_proj.weight' is float32 \({rows}, {cols + 1}\); .* expects float32 \({rows}, {cols}\)"
    with pytest.raises(ValueError, match=expected):
        model_from_state(converted.shape, "exact", state)


def test_a_linear_with_no_tensors_is_named(converted):
    state = {k: v for k, v in converted.state.items() if not k.startswith("layers.0.qkv_proj.")}
    with pytest.raises(ValueError, match="no linear 'layers.0.qkv_proj'"):
        model_from_state(converted.shape, "exact", state)
