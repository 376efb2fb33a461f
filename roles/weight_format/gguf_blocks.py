"""A GGUF's own quantised blocks, regrouped without changing any value.

- ``pack_gguf_blocks``: Q4_0 / Q4_1 / Q8_0 blocks -> codes plus float32 per-block scales (and mins for
  4-bit), the layout of roleserve's CPU kernels (``roles/scheduler/kernels/linear_kernels.h``).
- ``q4_1_to_int4_parts``: Q4_1 blocks (w = d * q + m per 32 weights) -> torch's group-32 int4 layout:
  scale = d, zero = m + 8 * d, since that kernel computes (q - 8) * scale + zero.
"""

from __future__ import annotations

import numpy as np
import torch

from roles.model_files.gguf_checkpoint import RawQuantTensor

PACKED_TYPES = ("Q4_0", "Q4_1", "Q8_0")


def _half(blocks: np.ndarray, offset: int) -> np.ndarray:
    """The float16 at ``offset`` of every block, as float32: (rows, groups)."""
    return blocks[..., offset : offset + 2].copy().view(np.float16)[..., 0].astype(np.float32)


def pack_gguf_blocks(raw: RawQuantTensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """(codes, scales, mins or None) from the file's blocks; the values the kernels compute are the file's."""
    blocks = raw.block_view()
    scales = _half(blocks, 0)
    if raw.type_name == "Q8_0":
        codes = np.ascontiguousarray(blocks[..., 2:]).view(np.int8).reshape(raw.rows, raw.cols)
        return torch.from_numpy(codes), torch.from_numpy(scales), None
    if raw.type_name == "Q4_1":
        mins, nibbles = _half(blocks, 2), blocks[..., 4:]
    else:  # Q4_0: w = d * (q - 8)
        mins, nibbles = -8.0 * scales, blocks[..., 2:]
    codes = np.ascontiguousarray(nibbles).reshape(raw.rows, raw.cols // 2)
    return torch.from_numpy(codes), torch.from_numpy(scales), torch.from_numpy(mins)


def q4_1_to_int4_parts(raw: RawQuantTensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """GGUF Q4_1 blocks -> (codes (out, in) uint8, scales (in/32, out), zeros (in/32, out)); no float weights."""
    blocks = raw.block_view()
    d, m = _half(blocks, 0), _half(blocks, 2)  # (out, groups)
    packed = blocks[..., 4:]  # (out, groups, 16): low nibbles are weights 0..15, high nibbles 16..31
    codes = np.concatenate([packed & 0x0F, packed >> 4], axis=-1).reshape(raw.rows, raw.cols)
    scales = torch.from_numpy(d.T.copy())
    zeros = torch.from_numpy((m + 8.0 * d).T.copy())
    return torch.from_numpy(codes), scales, zeros
