"""Linears that run a GGUF's own quantised blocks on roleserve's CPU kernels (``exec.weight_dtype: auto``).

The weights are the file's Q4_0 / Q4_1 / Q8_0 blocks regrouped, without changing any value, into codes plus
float32 per-group scales (and mins for 4-bit) by ``roles.weight_format.gguf_blocks``: the layout
``kernels/linear_kernels.h`` documents. The same module serves any number of rows: the kernel reads each
weight block once per call and applies it to every row.
"""

from __future__ import annotations

import torch
from torch import nn

from roles.scheduler.kernels import native
from roles.scheduler.models.state_loading import meta


class PackedLinear(nn.Module):
    """y = x @ W.T with W as codes (Q4: (out, in/2) uint8; Q8: (out, in) int8) and per-32 scales (and mins)."""

    def __init__(self, codes: torch.Tensor, scales: torch.Tensor, mins: torch.Tensor | None):
        super().__init__()
        self.kind = native.Q8 if codes.dtype == torch.int8 else native.Q4
        self.out_features = codes.shape[0]
        self.in_features = codes.shape[1] * (2 if self.kind == native.Q4 else 1)
        self.register_buffer("block_codes", codes)
        self.register_buffer("block_scales", scales)
        self.register_buffer("block_mins", mins)
        self._view: native.RsLinear | None = None

    @classmethod
    def empty(cls, out_features: int, in_features: int, eight_bit: bool) -> PackedLinear:
        groups = (out_features, in_features // native.GROUP)
        if eight_bit:
            return cls(meta((out_features, in_features), torch.int8), meta(groups), None)
        return cls(meta((out_features, in_features // 2), torch.uint8), meta(groups), meta(groups))

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
