"""exec.activation_dtype int16: every quantised linear multiplies int16 inputs with the blocks' integer codes,
in row kernels below 16 rows (int16_rows.h) and in tiles of a work item's decoded codes from 16 (int16_tiles.h).
int8: from 16 rows, int8 inputs in tiles where the path takes the type (int8_tiles.h, isa.INT8_TILES: every
type with AVX512_VNNI, those whose codes fit 6 bits on avx2); below 16 rows, on avx2, int8 inputs against the
packed tiles of those types (int8_packed_rows.h, isa.INT8_ROWS); int16 elsewhere.

Random valid blocks of every tensor type (``tests.random_blocks``), 37 output rows, on every instruction-set
path this CPU has:
- a quantised type computes the float64 product of its dequantised weights and the inputs as rounded (each
  32 inputs to int16 steps of their largest magnitude / 32767, or int8 steps of / 127 once each row's
  native.INT8_KEPT inputs of largest magnitude are left out, unrounded), to float32 summation, its offsets too
  (w = d q + m: each weight whole meets the rounded input);
- a row's outputs are the same bits whatever else is in the call, from 1 to 15 rows; and from 1 to 40 where
  int8 takes the type at every number of rows (the packed row kernels give the tiles' bits);
- float tensor types compute what float32 activations compute, bit for bit, at any number of rows.
"""

from __future__ import annotations

import gguf
import numpy as np
import pytest
import torch
from gguf.quants import dequantize

from roles.model_files.tensor_types import BY_NAME, SUPPORTED_NAMES
from roles.scheduler.kernels import native
from roles.scheduler.kernels.isa import takes_int8
from roles.scheduler.models.block_linear import BlockLinear
from tests.kernel_gate import needs_kernels
from tests.random_blocks import random_rows

pytestmark = needs_kernels

OUT_FEATURES = 37
FLOAT_TYPES = ("F32", "F16", "BF16")
QUANTISED = [name for name in SUPPORTED_NAMES if name not in FLOAT_TYPES]


@pytest.fixture(params=["int16", "int8"])
def integer_activations(request):
    native.set_activation_dtype(request.param)
    yield request.param
    native.set_activation_dtype("float32")


# The bytes of a block that hold its codes, for the types whose weights are d q + m (an offset): with them
# zeroed, the blocks dequantise to the offsets alone.
CODE_BYTES = {"Q4_1": (4, 20), "Q5_1": (4, 24), "Q2_K": (16, 80), "Q4_K": (16, 144), "Q5_K": (16, 176)}


def _dequantised(type_name: str, blocks: np.ndarray) -> torch.Tensor:
    values = dequantize(blocks, gguf.GGMLQuantizationType[type_name]).reshape(blocks.shape[0], -1)
    return torch.from_numpy(values.astype(np.float32)).double()


def _linear(type_name: str, seed: int) -> tuple[BlockLinear, torch.Tensor, torch.Tensor]:
    """A linear of two blocks' width, its dequantised weight's coded part (d q) and its offsets (m)."""
    cols = 2 * max(BY_NAME[type_name].block_size, 64)
    blocks = random_rows(type_name, OUT_FEATURES, cols, seed=seed)
    weight = _dequantised(type_name, blocks)
    offsets = torch.zeros_like(weight)
    if type_name in CODE_BYTES:
        start, end = CODE_BYTES[type_name]
        uncoded = blocks.reshape(OUT_FEATURES, -1, BY_NAME[type_name].block_bytes).copy()
        uncoded[:, :, start:end] = 0
        offsets = _dequantised(type_name, uncoded.reshape(OUT_FEATURES, -1))
    linear = BlockLinear(cols, [BY_NAME[type_name].type_id], [torch.from_numpy(blocks)])
    return linear, weight - offsets, offsets


def _as_rounded(x: torch.Tensor, levels: float = 32767.0) -> torch.Tensor:
    """x as the kernels round it: each 32 values to the nearest multiple of their largest magnitude / levels
    (the multiplier and the step computed in float32, ties to even), in float64; with int8's 127 levels, each
    row's native.INT8_KEPT values of largest magnitude first set aside (zeroed) and put back unrounded."""
    kept = x.abs().topk(native.INT8_KEPT, dim=-1).indices if levels == 127.0 else None
    rest = x if kept is None else x.scatter(1, kept, 0.0)
    groups = rest.reshape(x.shape[0], -1, 32)
    top = groups.abs().amax(dim=-1, keepdim=True)
    step = top / levels
    inverse = torch.where(top > 0, levels / top, torch.zeros_like(top))
    codes = torch.round(groups * inverse)
    rounded = (codes.double() * step.double()).reshape(x.shape)
    return rounded if kept is None else rounded.scatter(1, kept, x.gather(1, kept).double())


def _levels(integer_activations: str, rows: int, kernel_isa: str, type_name: str) -> float:
    """The steps up to a group's largest magnitude that a call of `rows` rows of type_name rounds its inputs to."""
    int8 = integer_activations == "int8" and takes_int8(kernel_isa, type_name, rows)
    return 127.0 if int8 else 32767.0


def _inputs(rows: int, cols: int) -> torch.Tensor:
    x = torch.randn(rows, cols, generator=torch.Generator().manual_seed(rows))
    x[:, 5] *= 40.0  # an outlier channel, as activations have: its groups' other values round coarser
    return x


@pytest.mark.parametrize("type_name", QUANTISED)
@pytest.mark.parametrize("rows", [1, 2, 3, 5, 15, 16, 23, 33])
def test_a_quantised_type_multiplies_the_rounded_inputs(type_name, rows, kernel_isa, integer_activations):
    linear, coded, offsets = _linear(type_name, seed=rows)
    x = _inputs(rows, linear.in_features)
    out = linear(x).double()
    rounded = _as_rounded(x, _levels(integer_activations, rows, kernel_isa, type_name))
    expected = rounded @ (coded + offsets).T  # the offsets meet the rounded inputs too
    unrounded = x.double() @ (coded + offsets).T
    scale = expected.abs().max()
    error = (out - expected).abs().max() / scale
    rounding = (unrounded - expected).abs().max() / scale
    assert error < 2e-6, f"{type_name}: relative error {error:.2e} against the rounded inputs' product"
    assert rounding > 5 * error, f"{type_name}: the test cannot tell rounded from unrounded inputs"


@pytest.mark.parametrize("type_name", [name for name in CODE_BYTES if name in QUANTISED])
@pytest.mark.parametrize("rows", [1, 16, 33])
def test_offsets_meet_the_rounded_inputs(type_name, rows, kernel_isa, integer_activations):
    """Blocks whose codes are zeroed weigh every input by their offsets alone. Each group of 32 inputs holds
    one 1.0 and 31 values of 0.4 steps, which round to 0: the offsets must meet those zeros, as every weight
    meets its rounded input, not the unrounded inputs' sums (12.4 steps a group more). The first group holds
    native.INT8_KEPT more inputs of magnitude 1, alternately 1 and -1, so that it keeps one when int8 sets a row's
    largest inputs aside; they add nothing, their offsets being the same within a group."""
    cols = 2 * max(BY_NAME[type_name].block_size, 64)
    blocks = random_rows(type_name, OUT_FEATURES, cols, seed=rows).reshape(
        OUT_FEATURES, -1, BY_NAME[type_name].block_bytes
    )
    start, end = CODE_BYTES[type_name]
    blocks[:, :, start:end] = 0
    blocks = blocks.reshape(OUT_FEATURES, -1)
    offsets = _dequantised(type_name, blocks)
    linear = BlockLinear(cols, [BY_NAME[type_name].type_id], [torch.from_numpy(blocks)])
    x = torch.full((rows, cols), 0.4 / _levels(integer_activations, rows, kernel_isa, type_name))
    x[:, ::32] = 1.0
    x[:, 1 : native.INT8_KEPT + 1] = torch.tensor([1.0, -1.0]).repeat(native.INT8_KEPT // 2)
    rounded = torch.where(x.abs() == 1.0, x, 0.0)
    expected = rounded.double() @ offsets.T
    scale = expected.abs().max()
    error = (linear(x).double() - expected).abs().max() / scale
    assert error < 2e-6, f"{type_name}: relative error {error:.2e} against the rounded inputs' product"
    assert (x.double() @ offsets.T - expected).abs().max() / scale > 100 * 2e-6


@pytest.mark.parametrize("types", [("Q4_1", "Q8_0"), ("Q6_K", "Q4_K"), ("Q4_0", "IQ4_NL", "Q5_1")])
def test_a_linear_takes_int8_only_where_every_quantised_part_does(types, kernel_isa, integer_activations):
    """A linear of several parts (fused Q/K/V, gate/up) rounds its rows once for all of them: to int8 only
    where the path takes every part's type, to int16 otherwise."""
    rows, cols = 24, 256
    parts = [random_rows(name, OUT_FEATURES, cols, seed=index) for index, name in enumerate(types)]
    weight = torch.cat([_dequantised(name, blocks) for name, blocks in zip(types, parts, strict=True)])
    linear = BlockLinear(
        cols, [BY_NAME[name].type_id for name in types], [torch.from_numpy(b) for b in parts]
    )
    x = _inputs(rows, cols)
    int8 = integer_activations == "int8" and all(takes_int8(kernel_isa, name, rows) for name in types)
    expected = _as_rounded(x, 127.0 if int8 else 32767.0) @ weight.T
    error = (linear(x).double() - expected).abs().max() / expected.abs().max()
    assert error < 2e-6, (
        f"{types}: relative error {error:.2e} against the inputs rounded as {'int8' if int8 else 'int16'}"
    )


@pytest.mark.parametrize("type_name", QUANTISED)
def test_a_rows_outputs_do_not_depend_on_the_other_rows_of_the_call(
    type_name, kernel_isa, integer_activations
):
    linear, _, _ = _linear(type_name, seed=3)
    x = _inputs(40, linear.in_features)
    alone = torch.cat([linear(x[r : r + 1]) for r in range(15)])
    for rows in range(2, 16):
        assert torch.equal(linear(x[:rows]), alone[:rows]), f"{type_name}: {rows} rows"
    assert torch.equal(linear(x[:15].flip(0)), alone.flip(0))
    if integer_activations == "int8" and takes_int8(kernel_isa, type_name, 1):
        # The packed int8 row kernels give the tiles' bits: a row's outputs do not depend on its call at all.
        tiles = linear(x)
        assert torch.equal(tiles[:15], alone), f"{type_name}: 40 rows"
        assert torch.equal(linear(x[20:36]), tiles[20:36])


@pytest.mark.parametrize("type_name", SUPPORTED_NAMES)
@pytest.mark.parametrize("rows", [1, 16, 33])
def test_float_types_stay_float32(type_name, rows, kernel_isa, integer_activations):
    linear, _, _ = _linear(type_name, seed=rows)
    x = _inputs(rows, linear.in_features)
    native.set_activation_dtype("float32")
    float32 = linear(x)
    native.set_activation_dtype(integer_activations)
    assert torch.equal(linear(x), float32) == (type_name in FLOAT_TYPES)


def test_the_setting_is_process_wide_and_checked():
    assert native.activation_dtype() == "float32"
    native.set_activation_dtype("int16")
    try:
        assert native.activation_dtype() == "int16"
    finally:
        native.set_activation_dtype("float32")
    with pytest.raises(ValueError, match="int4"):
        native.set_activation_dtype("int4")


@pytest.mark.parametrize("type_name", ["Q4_1", "Q6_K", "Q8_0"])
@pytest.mark.parametrize("rows", [5, 24])
def test_mixed_gives_int8_inputs_to_the_marked_linears_only(type_name, rows, kernel_isa):
    """exec.activation_dtype mixed: a linear marked int8_inputs computes what int8 computes, bit for bit; an
    unmarked one what int16 computes."""
    linear, _, _ = _linear(type_name, seed=rows)
    x = _inputs(rows, linear.in_features)
    outputs = {}
    try:
        for activations in ("int16", "int8"):
            native.set_activation_dtype(activations)
            outputs[activations] = linear(x)
        native.set_activation_dtype("mixed")
        for marked in (False, True):
            linear.int8_inputs = marked
            expected = outputs["int8" if marked else "int16"]
            assert torch.equal(linear(x), expected), f"{type_name}, {rows} rows, marked {marked}"
    finally:
        native.set_activation_dtype("float32")
    # Whether int8 differs from int16 at all here: where the path takes the type at that many rows.
    assert torch.equal(outputs["int8"], outputs["int16"]) == (not takes_int8(kernel_isa, type_name, rows))
