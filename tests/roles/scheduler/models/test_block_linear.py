"""block_linear.prepare_kernel_views: with integer activations every BlockLinear of a model gets its packed
tiles at once, the file's pages of the packed rows leave the process, and the outputs stay the same bits."""

from __future__ import annotations

import mmap
import warnings

import numpy as np
import torch
from torch import nn

from roles.model_files.tensor_types import BY_NAME
from roles.scheduler.kernels import native
from roles.scheduler.models.block_linear import BlockLinear, prepare_kernel_views
from roles.scheduler.models.quantized_linear import linear_for
from tests.kernel_gate import needs_kernels
from tests.random_blocks import random_rows

pytestmark = needs_kernels

COLS = 512
TYPES = ("Q4_1", "Q8_0")
ROWS = (2 * native.PACKED_TILE_ROWS + 3, native.PACKED_TILE_ROWS)  # whole tiles and 3 rows past them


def _mapped_model(tmp_path) -> tuple[nn.Module, list[int]]:
    """Two BlockLinears whose blocks are read-only mappings of a file, as a GGUF's weights are; and the
    byte counts of their whole tiles."""
    linears, tile_bytes = [], []
    for index, (type_name, rows) in enumerate(zip(TYPES, ROWS, strict=True)):
        blocks = random_rows(type_name, rows, COLS, seed=index)
        path = tmp_path / f"{type_name}.bin"
        path.write_bytes(blocks.tobytes())
        with open(path, "rb") as handle:
            mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        array = np.frombuffer(mapped, dtype=np.uint8).reshape(blocks.shape)
        with warnings.catch_warnings():  # read-only memory: torch warns that it may not write it
            warnings.simplefilter("ignore", UserWarning)
            tensor = torch.from_numpy(array)
        linears.append(BlockLinear(COLS, [BY_NAME[type_name].type_id], [tensor]))
        tile_bytes.append(rows // native.PACKED_TILE_ROWS * native.PACKED_TILE_ROWS * blocks.shape[1])
    return nn.Sequential(*linears), tile_bytes


def test_every_block_linear_is_packed_its_file_pages_dropped_and_its_outputs_unchanged(tmp_path):
    model, tile_bytes = _mapped_model(tmp_path)
    native.set_activation_dtype("int16")
    # 17 rows: from the file's blocks the int16 tiles take them, whose bits the packed tiles keep.
    x = torch.randn(native.PACKED_TILE_ROWS + 1, COLS, generator=torch.Generator().manual_seed(1))
    before = [
        native.linear_forward(native.linear_view([(m.part_types[0], m.blocks_0.numpy())], COLS), x)
        for m in model
    ]
    dropped = prepare_kernel_views(model)
    # Whole pages inside the tiles' bytes leave; a page the rows past the tiles share stays.
    assert sum(tile_bytes) - 2 * mmap.PAGESIZE <= dropped <= sum(tile_bytes)
    for linear, expected in zip(model, before, strict=True):
        assert linear.kernel_view().parts[0].packed is not None
        assert torch.equal(linear(x), expected)


def test_float32_activations_pack_nothing_and_drop_nothing(tmp_path):
    model, _ = _mapped_model(tmp_path)
    assert prepare_kernel_views(model) == 0
    assert all(linear.kernel_view().parts[0].packed is None for linear in model)


def test_the_output_and_down_projections_are_marked_for_int8_inputs():
    """exec.activation_dtype mixed gives int8 inputs to the linears of INT8_INPUT_KINDS (the last part of their
    module's name), in every layer; the others stay unmarked, in their kernel views too."""
    blocks = torch.from_numpy(random_rows("Q4_1", native.PACKED_TILE_ROWS, COLS, seed=0))
    kinds = ("qkv_proj", "o_proj", "gate_up_proj", "down_proj")
    prefixes = [f"layers.{i}.{kind}." for i in range(2) for kind in kinds] + ["lm_head."]
    state = {}
    for prefix in prefixes:
        state[prefix + "block_types"] = torch.tensor([BY_NAME["Q4_1"].type_id], dtype=torch.int32)
        state[prefix + "blocks_0"] = blocks
    linears = {prefix: linear_for(state, prefix, native.PACKED_TILE_ROWS, COLS) for prefix in prefixes}
    marked = sorted(prefix for prefix, linear in linears.items() if linear.int8_inputs)
    assert marked == [f"layers.{i}.{kind}." for i in range(2) for kind in ("down_proj", "o_proj")]
    for linear in linears.values():
        linear.blocks_0 = blocks
        assert linear.kernel_view().int8_inputs == int(linear.int8_inputs)
