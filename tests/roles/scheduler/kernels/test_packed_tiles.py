"""Packed tiles (packed_layout.h, packed_tiles.h): a Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K or Q6_K part's
whole tiles of 16 rows repacked column by column, which calls of any number of rows read with int16 activations (int8:
below 16 rows, with int8 inputs on avx2 where the type takes them, int8_packed_rows.h: test_integer_activations.py).

- the packed bytes hold what packed_layout.h says: read back by that description, every code of the file's
  blocks, and their scales (Q4_K, Q5_K, Q6_K: each group's scales and offset as the gguf package dequantises
  them);
- a row's outputs have the same bits in calls of 1 to 33 rows, and the same bits as the int16 tiles
  (int16_tiles.h) give from the file's blocks, on every instruction-set path: the two kernels do the same
  arithmetic in the same order; columns past the last whole tile (the row kernels below 16 rows) are left
  out of that comparison;
- the views carry the packed tiles only once integer activations are on, and a type without a packed form
  gets none; packing by several threads gives the bytes one thread gives.
Their accuracy against the float64 product is test_integer_activations.py's, whose linears of 37 rows take
the packed tiles for rows 0-31.
"""

from __future__ import annotations

import gguf
import numpy as np
import pytest
import torch
from gguf.quants import dequantize

from roles.model_files.tensor_types import BY_NAME
from roles.scheduler.kernels import native
from roles.scheduler.kernels.isa import takes_int8
from roles.scheduler.models.block_linear import BlockLinear
from tests.kernel_gate import needs_kernels
from tests.random_blocks import random_rows

pytestmark = needs_kernels

PACKED = ("Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q4_K", "Q5_K", "Q6_K")
ROWS = 37  # two whole tiles and 5 rows the row kernels take
COLS = 512  # two Q4_K blocks


def _blocks(type_name: str, seed: int = 0) -> np.ndarray:
    return random_rows(type_name, ROWS, COLS, seed=seed)


def _file_codes(type_name: str, blocks: np.ndarray) -> np.ndarray:
    """(rows, groups, 32) codes as the file stores them (Q4: 0..15, Q8_0: -128..127)."""
    kind = BY_NAME[type_name]
    per_block = blocks.reshape(blocks.shape[0], -1, kind.block_bytes)
    if type_name == "Q8_0":
        return per_block[..., 2:34].view(np.int8).astype(np.int32)
    if (
        type_name == "Q6_K"
    ):  # per 128 weights: 64 bytes of low nibbles (2 runs of 32, low then high nibble), 32 of 2-bit
        rows, count = blocks.shape[0], per_block.shape[1]
        codes = np.zeros((rows, count, 8, 32), dtype=np.int32)
        for j in range(8):
            half, quarter = divmod(j, 4)
            low = per_block[..., half * 64 + (quarter % 2) * 32 :][..., :32] >> (4 * (quarter // 2)) & 0x0F
            top = per_block[..., 128 + half * 32 :][..., :32] >> (2 * quarter) & 3
            codes[:, :, j] = low | top << 4
        return codes.reshape(rows, -1, 32)
    if type_name in (
        "Q4_K",
        "Q5_K",
    ):  # 4 runs of 32 bytes: sub-block 2i in their low nibbles, 2i + 1 in the high
        start = 48 if type_name == "Q5_K" else 16
        runs = per_block[..., start : start + 128].reshape(blocks.shape[0], -1, 4, 32)
        codes = (
            np.stack([runs & 0x0F, runs >> 4], axis=3).reshape(blocks.shape[0], -1, 8, 32).astype(np.int32)
        )
        if (
            type_name == "Q5_K"
        ):  # byte i of the 32 before the nibbles: bit j, sub-block j's code i's fifth bit
            fifth = per_block[..., 16:48].astype(np.int32)[:, :, None, :] >> np.arange(8)[:, None] & 1
            codes |= fifth << 4
        return codes.reshape(blocks.shape[0], -1, 32)
    halves = 2 if type_name in ("Q4_1", "Q5_1") else 1
    high = 4 if type_name.startswith("Q5") else 0
    nibbles = per_block[..., 2 * halves + high : 2 * halves + high + 16]
    codes = np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=-1).astype(np.int32)
    if high:  # bit j of the 32-bit word before the nibbles: code j's fifth bit
        bits = per_block[..., 2 * halves : 2 * halves + 4].copy().view(np.uint32).astype(np.int64)
        codes |= (((bits >> np.arange(32)) & 1) << 4).astype(np.int32)
    return codes


def _file_scales(type_name: str, blocks: np.ndarray) -> np.ndarray:
    """(rows, groups, scales) float32: each group's scale, then its offset or (Q6_K) its second scale; Q4_K's
    and Q6_K's from the gguf package's dequantisation of the blocks with every code set to known values."""
    kind = BY_NAME[type_name]
    per_block = blocks.reshape(blocks.shape[0], -1, kind.block_bytes)
    if type_name not in ("Q4_K", "Q5_K", "Q6_K"):
        count = 2 if type_name in ("Q4_1", "Q5_1") else 1
        halves = per_block[..., : 2 * count].copy().view(np.float16).astype(np.float32)
        return halves.reshape(blocks.shape[0], -1, count)
    if type_name == "Q6_K":  # the weights of codes 32 (0) and 33 (the scale), per 16
        uniform = per_block.copy()
        uniform[..., :128] = 0x11  # low nibbles 1: code 33 - 32 = 1 with the high bits below 2 (0b10)
        uniform[..., 128:192] = 0xAA
        ones = dequantize(uniform.reshape(blocks.shape[0], -1), gguf.GGMLQuantizationType.Q6_K)
        return ones.reshape(blocks.shape[0], -1, 2, 16)[..., 0].astype(np.float32)
    values = []
    start = 48 if type_name == "Q5_K" else 16
    for code in (0x00, 0x11):
        uniform = per_block.copy()
        uniform[..., start : start + 128] = code
        uniform[..., 16:start] = 0  # Q5_K: no fifth bits
        kind_id = gguf.GGMLQuantizationType[type_name]
        values.append(dequantize(uniform.reshape(blocks.shape[0], -1), kind_id))
    at_zero, at_one = (v.reshape(blocks.shape[0], -1, 32)[..., 0] for v in values)
    return np.stack([at_one - at_zero, at_zero], axis=-1).astype(np.float32)


def _read_packed(type_name: str, packed: np.ndarray, groups: int) -> tuple[np.ndarray, np.ndarray]:
    """The packed bytes read back as packed_layout.h describes them, in _file_codes' and _file_scales' shapes."""
    scales = 2 if type_name in ("Q4_1", "Q5_1", "Q4_K", "Q5_K", "Q6_K") else 1
    scale_type = np.float32 if type_name in ("Q4_K", "Q5_K", "Q6_K") else np.float16
    scale_bytes = scales * 16 * np.dtype(scale_type).itemsize
    code_bytes = 512 if type_name == "Q8_0" else 256
    high_bytes = 128 if type_name in ("Q5_0", "Q5_1", "Q5_K", "Q6_K") else 0
    tiles = packed.reshape(-1, groups, scale_bytes + code_bytes + high_bytes)
    values = tiles[..., :scale_bytes].copy().view(scale_type).astype(np.float32)
    values = values.reshape(-1, groups, scales, 16)
    words = tiles[..., scale_bytes : scale_bytes + code_bytes].copy().view(np.uint32)
    words = words.reshape(tiles.shape[0], groups, -1, 16)
    high = (
        tiles[..., scale_bytes + code_bytes :].copy().view(np.uint32).reshape(tiles.shape[0], groups, -1, 16)
    )
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
            if high_bytes:  # Q5: one bit at 4 + 4 (t % 2) + i; Q6_K: two at 2 (4 (t % 2) + i)
                width = 2 if type_name == "Q6_K" else 1
                at = 2 * (4 * (t % 2) + i) if width == 2 else 4 + 4 * (t % 2) + i
                bits = high[:, :, t // 2, :].astype(np.int64) >> at
                codes[:, :, 8 * t + 2 * i] |= (bits & (2**width - 1)) << 4
                codes[:, :, 8 * t + 2 * i + 1] |= ((bits >> 16) & (2**width - 1)) << 4
    # (tiles, groups, ..., column) -> (rows, groups, ...)
    codes = codes.transpose(0, 3, 1, 2).reshape(-1, groups, 32)
    values = values.transpose(0, 3, 1, 2).reshape(-1, groups, scales)
    return codes, values


@pytest.mark.parametrize("type_name", PACKED)
def test_the_packed_bytes_are_the_files_codes_and_scales_column_by_column(type_name):
    blocks = _blocks(type_name)
    packed = native.packed_rows(BY_NAME[type_name].type_id, blocks)
    # Q4_K: its scales and offsets as float32; Q5: 4 bytes of fifth bits a group spread over 8
    extra = {"Q4_K": 4 / 3, "Q5_K": 256 / 176, "Q6_K": 256 / 210, "Q5_0": 26 / 22, "Q5_1": 28 / 24}.get(
        type_name, 1
    )
    assert packed is not None and packed.size == 32 * blocks.shape[1] * extra  # the whole tiles
    codes, scales = _read_packed(type_name, packed, COLS // 32)
    np.testing.assert_array_equal(codes, _file_codes(type_name, blocks[:32]))
    np.testing.assert_array_equal(scales, _file_scales(type_name, blocks[:32]))


@pytest.mark.parametrize("threads", [2, 3])
def test_packing_by_several_threads_gives_the_bytes_one_thread_gives(threads):
    blocks = random_rows("Q4_K", 5 * native.PACKED_TILE_ROWS + 3, COLS, seed=8)
    one = native.packed_rows(BY_NAME["Q4_K"].type_id, blocks)
    np.testing.assert_array_equal(native.packed_rows(BY_NAME["Q4_K"].type_id, blocks, threads), one)


@pytest.mark.parametrize("type_name", ["Q3_K", "Q2_K", "IQ4_NL", "IQ4_XS", "F16"])
def test_a_type_without_a_packed_form_gets_none(type_name):
    blocks = random_rows(type_name, ROWS, 256, seed=1)
    assert native.packed_rows(BY_NAME[type_name].type_id, blocks) is None


def test_a_tile_is_packed_tile_rows_rows_and_fewer_are_not_packed():
    """native.PACKED_TILE_ROWS is the C layout's tile height: that many rows pack, one fewer do not."""
    tile = native.PACKED_TILE_ROWS
    for rows, packed in ((tile - 1, False), (tile, True), (2 * tile + 1, True)):
        blocks = random_rows("Q4_0", rows, COLS, seed=2)
        out = native.packed_rows(BY_NAME["Q4_0"].type_id, blocks)
        assert (out is not None) == packed, rows
        if packed:  # Q4_0 packs into the file's own size: the whole tiles' bytes, no more
            assert out.size == rows // tile * tile * blocks.shape[1]


@pytest.mark.parametrize("type_name", PACKED)
def test_a_rows_outputs_have_the_int16_tiles_bits_from_1_to_33_rows(type_name, kernel_isa):
    native.set_activation_dtype("int16")
    blocks = torch.from_numpy(_blocks(type_name, seed=4))
    linear = BlockLinear(COLS, [BY_NAME[type_name].type_id], [blocks])
    x = torch.randn(33, COLS, generator=torch.Generator().manual_seed(5))
    x[:, 7] *= 30.0
    unpacked = native.linear_view([(BY_NAME[type_name].type_id, blocks.numpy())], COLS)
    tiles = native.linear_forward(unpacked, x)[:, :32]  # 33 rows of the file's blocks: the int16 tiles
    for rows in (1, 2, 7, 15, 16, 33):
        assert torch.equal(linear(x[:rows])[:, :32], tiles[:rows]), f"{type_name}: {rows} rows"


@pytest.mark.parametrize("type_name", PACKED)
def test_int8_inputs_give_the_same_bits_from_a_packed_tile_as_from_the_files_blocks(type_name, kernel_isa):
    """From 16 rows with int8 activations the avx2 path decodes its int8 panel from a whole packed tile, so
    the file's pages stay out of memory (int8_madd_tiles.h); the other paths from the file's blocks. Either
    way, the bits the file's blocks give; where the path takes the type in int8, not int16's bits."""
    type_id = BY_NAME[type_name].type_id
    blocks = torch.from_numpy(_blocks(type_name, seed=6))
    x = torch.randn(33, COLS, generator=torch.Generator().manual_seed(7))
    x[:, 7] *= 30.0
    unpacked = native.linear_view([(type_id, blocks.numpy())], COLS)
    native.set_activation_dtype("int16")
    int16 = native.linear_forward(unpacked, x)[:, :32]
    native.set_activation_dtype("int8")
    linear = BlockLinear(COLS, [type_id], [blocks])
    assert linear.kernel_view().parts[0].packed is not None
    for rows in (16, 33):
        packed = linear(x[:rows])[:, :32]
        assert torch.equal(packed, native.linear_forward(unpacked, x[:rows])[:, :32]), (
            f"{type_name}: {rows} rows"
        )
        assert torch.equal(packed, int16[:rows]) != takes_int8(kernel_isa, type_name), (
            f"{type_name}: {rows} rows"
        )


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
