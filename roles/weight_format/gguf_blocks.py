"""A checkpoint's own blocks as the kernels run them, without changing any value.

- ``block_parts``: the blocks of the weights one linear stacks along its output rows (Q|K|V, gate|up), each
  weight a part of its own tensor type, as ``roles/scheduler/kernels/linear_kernels.h`` reads them: no
  float32 copy, and a view of the file's map where the rows are the file's.
- ``q4_1_to_int4_parts``: Q4_1 blocks (w = d * q + m per 32 weights) -> torch's group-32 int4 layout:
  scale = d, zero = m + 8 * d, since that kernel computes (q - 8) * scale + zero.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch

from roles.model_files.gguf_checkpoint import RawQuantTensor

MAX_PARTS = 4  # RS_MAX_PARTS in linear_kernels.h


def _half(blocks: np.ndarray, offset: int) -> np.ndarray:
    """The float16 at ``offset`` of every block, as float32: (rows, groups)."""
    return blocks[..., offset : offset + 2].copy().view(np.float16)[..., 0].astype(np.float32)


def _as_tensor(array: np.ndarray) -> torch.Tensor:
    """A uint8 tensor over the same memory: the file's map is read-only, and the kernels only read it."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
        return torch.from_numpy(array)


def block_parts(raws: list[RawQuantTensor]) -> dict[str, torch.Tensor]:
    """``blocks_<i>`` (rows_i, row bytes_i) uint8 and ``block_types`` (parts,) int32 ggml ids."""
    if not 0 < len(raws) <= MAX_PARTS:
        raise ValueError(f"a linear stacks 1 to {MAX_PARTS} weights; got {len(raws)}")
    tensors = {f"blocks_{i}": _as_tensor(raw.blocks) for i, raw in enumerate(raws)}
    tensors["block_types"] = torch.tensor([raw.kind.type_id for raw in raws], dtype=torch.int32)
    return tensors


def q4_1_to_int4_parts(raw: RawQuantTensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """GGUF Q4_1 blocks -> (codes (out, in) uint8, scales (in/32, out), zeros (in/32, out)); no float weights."""
    blocks = raw.block_view()
    d, m = _half(blocks, 0), _half(blocks, 2)  # (out, groups)
    packed = blocks[..., 4:]  # (out, groups, 16): low nibbles are weights 0..15, high nibbles 16..31
    codes = np.concatenate([packed & 0x0F, packed >> 4], axis=-1).reshape(raw.rows, raw.cols)
    scales = torch.from_numpy(d.T.copy())
    zeros = torch.from_numpy((m + 8.0 * d).T.copy())
    return torch.from_numpy(codes), scales, zeros
