"""Every tensor type on the CPU kernels computes what the gguf package's dequantisation says its blocks mean.

Random valid blocks (``tests.random_blocks``), for 1, 2, 8 and 33 input rows (the single-row path, the
small tiles, whole 8-row tiles and a remainder) and 37 output rows (two 16-row work blocks and a remainder),
as one part and stacked with parts of other types the way a K-quant file stacks Q|K|V; on every
instruction-set path this CPU has (on a BF16 path, whole 8-row tiles against bfloat16-rounded operands).
"""

from __future__ import annotations

import gguf
import numpy as np
import pytest
import torch
from gguf.quants import dequantize

from roles.model_files.tensor_types import BY_NAME, SUPPORTED_NAMES
from roles.scheduler.kernels import native
from roles.scheduler.models.block_linear import BlockLinear
from tests.kernel_gate import needs_kernels
from tests.random_blocks import random_rows

pytestmark = needs_kernels

OUT_FEATURES = 37


def _width(type_name: str) -> int:
    """Two blocks of the type and more than one 32-weight group per block (a 256-weight block has 8)."""
    return 2 * max(BY_NAME[type_name].block_size, 48 if BY_NAME[type_name].block_size == 1 else 32)


def _reference(type_name: str, blocks: np.ndarray, cols: int) -> torch.Tensor:
    values = dequantize(blocks, gguf.GGMLQuantizationType[type_name]).reshape(blocks.shape[0], cols)
    return torch.from_numpy(values.astype(np.float32))


def _expected(x: torch.Tensor, weight: torch.Tensor, kernel_isa: str) -> torch.Tensor:
    """x @ W.T in float64; on a BF16 path the rows of whole tiles multiply bfloat16-rounded inputs and weights
    (summed in float32, so the tolerance below holds), the other rows as on every path."""
    expected = x.double() @ weight.double().T
    if kernel_isa.endswith("bf16"):
        tiled = x.shape[0] // native.ROW_TILE * native.ROW_TILE
        expected[:tiled] = x[:tiled].bfloat16().double() @ weight.bfloat16().double().T
    return expected


def test_the_table_matches_the_gguf_package_and_the_kernels():
    for name in SUPPORTED_NAMES:
        kind = BY_NAME[name]
        qtype = gguf.GGMLQuantizationType[name]
        assert (int(qtype), (kind.block_size, kind.block_bytes)) == (
            kind.type_id,
            gguf.GGML_QUANT_SIZES[qtype],
        )
        assert native.supports_type(kind.type_id), name
    assert not native.supports_type(int(gguf.GGMLQuantizationType.IQ2_XXS))


@pytest.mark.parametrize("type_name", SUPPORTED_NAMES)
@pytest.mark.parametrize("rows", [1, 2, 8, 33])
def test_a_linear_of_each_type_computes_the_reference_values(type_name, rows, kernel_isa):
    cols = _width(type_name)
    blocks = random_rows(type_name, OUT_FEATURES, cols, seed=rows)
    weight = _reference(type_name, blocks, cols)
    linear = BlockLinear(cols, [BY_NAME[type_name].type_id], [torch.from_numpy(blocks)])
    x = torch.randn(rows, cols, generator=torch.Generator().manual_seed(rows))
    expected = _expected(x, weight, kernel_isa)
    error = (linear(x).double() - expected).abs().max() / expected.abs().max()
    assert error < 1e-5, f"{type_name}: relative error {error:.2e}"


@pytest.mark.parametrize("type_name", SUPPORTED_NAMES)
def test_rows_of_each_type_are_the_reference_rows(type_name, kernel_isa):
    """The embedding lookup: exactly the reference's float32 values."""
    cols = _width(type_name)
    blocks = random_rows(type_name, OUT_FEATURES, cols, seed=7)
    linear = BlockLinear(cols, [BY_NAME[type_name].type_id], [torch.from_numpy(blocks)])
    ids = torch.tensor([0, OUT_FEATURES - 1, 5, 5, 16])
    assert torch.equal(linear.rows(ids), _reference(type_name, blocks, cols)[ids])


@pytest.mark.parametrize("rows", [1, 8, 33])
def test_parts_of_different_types_stack_along_the_output_rows(rows, kernel_isa):
    """Q|K|V as a Q4_K_M file holds them: Q5_0 | Q5_0 | Q8_0, and a K-quant mix Q4_K | Q6_K | BF16."""
    for types, part_rows in ((["Q5_0", "Q5_0", "Q8_0"], [24, 8, 8]), (["Q4_K", "Q6_K", "BF16"], [17, 3, 20])):
        cols = 512
        parts = [
            random_rows(name, n, cols, seed=i)
            for i, (name, n) in enumerate(zip(types, part_rows, strict=True))
        ]
        weight = torch.cat([_reference(name, p, cols) for name, p in zip(types, parts, strict=True)])
        linear = BlockLinear(
            cols, [BY_NAME[name].type_id for name in types], [torch.from_numpy(p) for p in parts]
        )
        x = torch.randn(rows, cols, generator=torch.Generator().manual_seed(rows))
        expected = _expected(x, weight, kernel_isa)
        assert ((linear(x).double() - expected).abs().max() / expected.abs().max()) < 1e-5
        ids = torch.tensor([0, 23, 24, 31, 32, sum(part_rows) - 1])
        assert torch.equal(linear.rows(ids), weight[ids])
