"""Linears that run a GGUF's own quantised blocks on roleserve's CPU kernels (``exec.weight_dtype: auto``).

A Q4_0 / Q4_1 / Q8_0 weight is repacked, without changing any value, into codes plus float32 per-group
scales (and mins for 4-bit), the layout ``kernels/linear_kernels.h`` documents. The same module serves
any number of rows: the kernel reads each weight block once per call and applies it to every row.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from roles.model_files.gguf_checkpoint import RawQuantTensor
from roles.scheduler.kernels import native

PACKED_TYPES = ("Q4_0", "Q4_1", "Q8_0")


def _half(blocks: np.ndarray, offset: int) -> np.ndarray:
    """The float16 at ``offset`` of every block, as float32: (rows, groups)."""
    return blocks[..., offset : offset + 2].copy().view(np.float16)[..., 0].astype(np.float32)


def pack_gguf_blocks(raw: RawQuantTensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """(codes, scales, mins or None) from the file's blocks; the values the kernels compute are the file's."""
    groups = raw.cols // native.GROUP
    blocks = raw.blocks.reshape(raw.rows, groups, -1)  # (rows, groups, bytes per block)
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


class PackedLinear(nn.Module):
    """y = x @ W.T with W as codes (Q4: (out, in/2) uint8; Q8: (out, in) int8) and per-32 scales (and mins)."""

    def __init__(self, codes: torch.Tensor, scales: torch.Tensor, mins: torch.Tensor | None):
        super().__init__()
        self.kind = native.Q8 if codes.dtype == torch.int8 else native.Q4
        self.out_features = codes.shape[0]
        self.in_features = codes.shape[1] * (2 if self.kind == native.Q4 else 1)
        self.register_buffer("block_codes", codes.contiguous())
        self.register_buffer("block_scales", scales.to(torch.float32).contiguous())
        self.register_buffer("block_mins", None if mins is None else mins.to(torch.float32).contiguous())
        self._view: native.RsLinear | None = None

    def kernel_view(self) -> native.RsLinear:
        """The C view of the buffers; rebuilt if they were replaced (e.g. by shared-memory tensors)."""
        view = self._view
        if (
            view is None
            or view.codes != self.block_codes.data_ptr()
            or view.scales != self.block_scales.data_ptr()
        ):
            view = self._view = native.linear_view(
                self.kind, self.block_codes, self.block_scales, self.block_mins
            )
        return view

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, self.in_features).to(torch.float32).contiguous()
        return native.linear_forward(self.kernel_view(), flat).view(*x.shape[:-1], self.out_features)

    def rows(self, ids: torch.Tensor) -> torch.Tensor:
        """Rows of W as float32: the embedding lookup when W is a tied embedding table."""
        return native.weight_rows(self.kernel_view(), ids.to(torch.int64).contiguous())


def packed_from_state(state: dict[str, torch.Tensor], prefix: str) -> PackedLinear:
    """A PackedLinear around ``prefix.block_codes`` etc. of a converted state (the tensors, not copies)."""
    return PackedLinear(
        state[prefix + "block_codes"], state[prefix + "block_scales"], state.get(prefix + "block_mins")
    )
