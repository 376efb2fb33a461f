"""Packed tiles (packed_layout.h, packed_tiles.h): a Q4_0, Q4_1 or Q8_0 part's whole tiles of 16 rows repacked
column by column, which calls of any number of rows read with int16 activations (int8: below 16 rows).

- the packed bytes hold what packed_layout.h says: read back by that description, every code and scale of
  the file's blocks, in as many bytes;
- a row's outputs have the same bits in calls of 1 to 33 rows, and the same bits as the int16 tiles
  (int16_tiles.h) give from the file's blocks, on every instruction-set path: the two kernels do the same
  arithmetic in the same order; columns past the last whole tile (the row kernels below 16 rows) are left
  out of that comparison;
- the views carry the packed tiles only once integer activations are on, and a type without a packed form
  gets none.
Their accuracy against the float64 product is test_integer_activations.py's, whose linears of 37 rows take
the packed tiles for rows 0-31.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from roles.model_files.tensor_types import BY_NAME
from roles.scheduler.kernels import native
from roles.scheduler.models.block_linear import BlockLinear
from tests.kernel_gate import needs_kernels
from tests.random_blocks import random_rows

pytestmark = needs_kernels

PACKED = ("Q4_0", "Q4_1", "Q8_0")
ROWS = 37  # two whole tiles and 5 rows the row kernels take
COLS = 128


def _blocks(type_name: str, seed: int = 0) -> np.ndarray:
    return random_rows(type_name, ROWS, COLS, seed=seed)


def _codes_and_halves(type_name: str, blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rows, groups, 32) codes (Q4: 0..15, Q8_0: -128..127) and (rows, groups, halves) half floats' bits."""
    kind = BY_NAME[type_name]
    per_block = blocks.reshape(blocks.shape[0], -1, kind.block_bytes)
    halves = 2 if type_name == "Q4_1" else 1
    half_bits = per_block[..., : 2 * halves].copy().view(np.uint16)
    if type_name == "Q8_0":
        return per_block[..., 2:34].view(np.int8).astype(np.int32), half_bits
    nibbles = per_block[..., 2 * halves : 2 * halves + 16]
    return np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=-1).astype(np.int32), half_bits


def _read_packed(type_name: str, packed: np.ndarray, groups: int) -> tuple[np.ndarray, np.ndarray]:
    """The packed bytes read back as packed_layout.h describes them, in _codes_and_halves' shapes."""
    kind = BY_NAME[type_name]
    halves = 2 if type_name == "Q4_1" else 1
    tiles = packed.reshape(-1, groups, 16 * kind.block_bytes)
    half_bits = tiles[..., : 32 * halves].copy().view(np.uint16).reshape(-1, groups, halves, 16)
    words = tiles[..., 32 * halves :].copy().view(np.uint32).reshape(tiles.shape[0], groups, -1, 16)
    codes = np.zeros((tiles.shape[0], groups, 32, 16), dtype=np.int32)
    for t in range(words.shape[2]):
        word = words[:, :, t, :].astype(np.int64)
        if type_name == "Q8_0":
            as_bytes = [((word >> (8 * b)) & 0xFF).astype(np.uint8).view(np.int8) for b in range(4)]
            for position, byte in zip((0, 2, 1, 3), as_bytes, strict=True):
                codes[:, :, 4 * t + position] = byte
            continue
        for i in range(4):
            codes[:, :, 8 * t + 2 * i] = (word >> (4 * i)) & 0x0F
            codes[:, :, 8 * t + 2 * i + 1] = (word >> (16 + 4 * i)) & 0x0F
    # (tiles, groups, 32, column) -> (rows, groups, 32)
    codes = codes.transpose(0, 3, 1, 2).reshape(-1, groups, 32)
    half_bits = half_bits.transpose(0, 3, 1, 2).reshape(-1, groups, halves)
    return codes, half_bits


@pytest.mark.parametrize("type_name", PACKED)
def test_the_packed_bytes_are_the_files_codes_and_scales_column_by_column(type_name):
    blocks = _blocks(type_name)
    packed = native.packed_rows(BY_NAME[type_name].type_id, torch.from_numpy(blocks))
    assert packed is not None and packed.shape == (32, blocks.shape[1])  # the whole tiles, in as many bytes
    groups = COLS // 32
    codes, halves = _read_packed(type_name, packed.numpy(), groups)
    file_codes, file_halves = _codes_and_halves(type_name, blocks[:32])
    np.testing.assert_array_equal(codes, file_codes)
    np.testing.assert_array_equal(halves, file_halves)


@pytest.mark.parametrize("type_name", ["Q4_K", "Q6_K", "Q5_0", "IQ4_NL", "F16"])
def test_a_type_without_a_packed_form_gets_none(type_name):
    blocks = random_rows(type_name, ROWS, 256, seed=1)
    assert native.packed_rows(BY_NAME[type_name].type_id, torch.from_numpy(blocks)) is None


def test_fewer_than_16_rows_are_not_packed():
    blocks = random_rows("Q4_0", 15, COLS, seed=2)
    assert native.packed_rows(BY_NAME["Q4_0"].type_id, torch.from_numpy(blocks)) is None


@pytest.mark.parametrize("type_name", PACKED)
def test_a_rows_outputs_have_the_int16_tiles_bits_from_1_to_33_rows(type_name, kernel_isa):
    native.set_activation_dtype("int16")
    blocks = torch.from_numpy(_blocks(type_name, seed=4))
    linear = BlockLinear(COLS, [BY_NAME[type_name].type_id], [blocks])
    x = torch.randn(33, COLS, generator=torch.Generator().manual_seed(5))
    x[:, 7] *= 30.0
    unpacked = native.linear_view([(BY_NAME[type_name].type_id, blocks)], COLS)
    tiles = native.linear_forward(unpacked, x)[:, :32]  # 33 rows of the file's blocks: the int16 tiles
    for rows in (1, 2, 7, 15, 16, 33):
        assert torch.equal(linear(x[:rows])[:, :32], tiles[:rows]), f"{type_name}: {rows} rows"


def test_the_view_carries_packed_tiles_once_integer_activations_are_on():
    linear = BlockLinear(
        COLS,
        [BY_NAME["Q4_1"].type_id, BY_NAME["F16"].type_id],
        [
            torch.from_numpy(_blocks("Q4_1")),
            torch.from_numpy(random_rows("F16", 16, COLS, seed=3)),
        ],
    )
    assert [part.packed for part in linear.kernel_view().parts[:2]] == [None, None]
    native.set_activation_dtype("int16")
    parts = linear.kernel_view().parts
    assert parts[0].packed is not None and parts[1].packed is None
