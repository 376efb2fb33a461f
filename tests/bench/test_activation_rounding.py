"""bench/activation_rounding.py: its rounding grid, and its hooks on a tiny Llama loaded through the real loader
(exact), which round the chosen linears' inputs inside the block and none after it."""

from __future__ import annotations

import pytest
import torch

from bench.activation_rounding import (
    HEAD,
    channel_peaks,
    linear_kinds,
    round_inputs,
    round_inputs_keeping,
    round_inputs_keeping_largest,
    rounded_inputs,
)
from roles.scheduler.loading.from_file import load_model
from tests.tiny_checkpoint import write_tiny_llama


def test_rounding_keeps_each_groups_largest_magnitude_and_lands_on_its_grid():
    torch.manual_seed(0)
    x = torch.randn(3, 64) * torch.tensor([0.01] * 32 + [100.0] * 32)
    rounded = round_inputs(x, bits=8, group=32)
    for run, out in zip(x.reshape(-1, 32), rounded.reshape(-1, 32), strict=True):
        top = run.abs().max()
        step = top / 127
        assert out.abs().max() == pytest.approx(float(top), rel=1e-6)
        assert torch.allclose(out / step, torch.round(out / step), atol=1e-3)
        assert float((out - run).abs().max()) <= float(step) / 2 * (1 + 1e-5)


def test_more_bits_round_less_and_a_zero_group_stays_zero():
    torch.manual_seed(1)
    x = torch.randn(4, 96)
    x[1, 32:64] = 0.0
    err8 = (round_inputs(x, 8, 32) - x).abs().max()
    err16 = (round_inputs(x, 16, 32) - x).abs().max()
    assert err16 < err8 / 100
    assert torch.equal(round_inputs(x, 8, 32)[1, 32:64], torch.zeros(32))
    with pytest.raises(ValueError, match="multiple of the group"):
        round_inputs(torch.randn(2, 40), 8, 32)


def test_each_row_keeps_its_own_largest_channels():
    """--keep-from rows: row 0's outlier is channel 5, row 1's channel 40; each stays as it is in its own row
    alone, and the rest of each row rounds as if that channel were zero."""
    torch.manual_seed(3)
    x = torch.randn(2, 64) * 0.1
    x[0, 5], x[1, 40] = 50.0, -30.0
    rounded = round_inputs_keeping_largest(x, 8, 32, keep=1)
    for row, channel in ((0, 5), (1, 40)):
        expected = round_inputs_keeping(x[row : row + 1], 8, 32, torch.tensor([channel]))
        assert torch.equal(rounded[row : row + 1], expected)


def test_kept_channels_stay_as_they_are_and_set_no_groups_step():
    torch.manual_seed(2)
    x = torch.randn(2, 64) * 0.1
    x[:, 5] = 50.0  # an outlier: rounded with the rest, it would make the group's step 50 / 127
    kept = torch.tensor([5])
    rounded = round_inputs_keeping(x, 8, 32, kept)
    assert torch.equal(rounded[:, 5], x[:, 5])
    rest = x.clone()
    rest[:, 5] = 0.0
    expected = round_inputs(rest, 8, 32)
    expected[:, 5] = x[:, 5]
    assert torch.equal(rounded, expected)
    assert (rounded - x).abs().max() < (round_inputs(x, 8, 32) - x).abs().max() / 50
    assert torch.equal(
        round_inputs_keeping(x, 8, 32, torch.zeros(0, dtype=torch.long)), round_inputs(x, 8, 32)
    )


def test_channel_peaks_are_the_largest_input_magnitudes_each_linear_saw(tmp_path):
    model, shape = load_model(str(write_tiny_llama(tmp_path / "tiny")), weight_dtype="exact")
    seen: list[torch.Tensor] = []
    layer = model.layers[0]
    handle = layer.down_proj.register_forward_pre_hook(lambda _m, args: seen.append(args[0].detach().clone()))
    peaks = channel_peaks(model, shape, {"down_proj", HEAD}, [[1, 2, 3], [4, 5]], tokens=3)
    handle.remove()
    expected = torch.cat([x.reshape(-1, x.shape[-1]) for x in seen]).abs().amax(dim=0)
    assert torch.equal(peaks["layers.0.down_proj"], expected)
    assert HEAD in peaks and peaks[HEAD].shape == (layer.o_proj.weight.shape[0],)
    assert not any(name.endswith("qkv_proj") for name in peaks)


def test_hooks_round_the_chosen_linears_inside_the_block_only(tmp_path):
    model, _shape = load_model(str(write_tiny_llama(tmp_path / "tiny")), weight_dtype="exact")
    kinds = linear_kinds(model)
    assert {"qkv_proj", "o_proj", "gate_up_proj", "down_proj", HEAD} <= set(kinds)
    layer = model.layers[0]
    x = torch.randn(2, layer.down_proj.weight.shape[1])
    plain = layer.down_proj(x)
    with rounded_inputs(model, {"down_proj"}, bits=4, group=32):
        assert torch.allclose(layer.down_proj(x), layer.down_proj(round_inputs(x, 4, 32)))
        assert not torch.allclose(layer.down_proj(x), plain)
        hidden = torch.randn(2, layer.o_proj.weight.shape[0])
        assert torch.equal(
            model.vocab_logits(hidden), type(model).vocab_logits(model, hidden)
        )  # head not chosen
    assert torch.equal(layer.down_proj(x), plain)
    with rounded_inputs(model, {HEAD}, bits=4, group=32):
        assert torch.equal(
            model.vocab_logits(hidden), type(model).vocab_logits(model, round_inputs(hidden, 4, 32))
        )
    assert torch.equal(model.vocab_logits(hidden), type(model).vocab_logits(model, hidden))
