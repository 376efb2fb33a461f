"""Linears that run a checkpoint's own blocks on roleserve's CPU kernels (``exec.weight_dtype: auto``).

The weights are the stacked weights' blocks as the checkpoint stores them, one part per weight, each of its
own tensor type (``roles.model_files.tensor_types``): a Q4_K_M file's Q|K|V may be Q5_0 | Q5_0 | Q8_0.
No value is changed and no float32 copy is made; the kernels decode every group of 32 weights as they
read it. The same module serves any number of rows: the kernel reads each weight group once per call and
applies it to every row.
"""

from __future__ import annotations

import torch
from torch import nn

from roles.model_files.tensor_types import BY_ID
from roles.scheduler.kernels import native
from roles.scheduler.kernels.isa import INT8_INPUT_KINDS
from roles.scheduler.models.file_pages import drop_file_pages, file_backed_spans
from roles.scheduler.models.placeholders import meta


def takes_int8_inputs(prefix: str) -> bool:
    """Whether the linear whose tensors sit under ``prefix`` (e.g. "layers.0.o_proj.") is of INT8_INPUT_KINDS."""
    return prefix.rstrip(".").rsplit(".", 1)[-1] in INT8_INPUT_KINDS


class BlockLinear(nn.Module):
    """y = x @ W.T with W's output rows in ``len(part_types)`` parts of (rows, row bytes) uint8 blocks."""

    def __init__(self, in_features: int, part_types: list[int], parts: list[torch.Tensor]):
        super().__init__()
        self.in_features = in_features
        self.out_features = sum(blocks.shape[0] for blocks in parts)
        self.part_types = list(part_types)
        self.register_buffer("block_types", torch.tensor(self.part_types, dtype=torch.int32))
        for index, blocks in enumerate(parts):
            self.register_buffer(f"blocks_{index}", blocks)
        self._view: native.RsLinear | None = None
        # Whether exec.activation_dtype mixed rounds this linear's inputs to int8 (INT8_INPUT_KINDS).
        self.int8_inputs = False
        # Per part its whole tiles repacked (native.packed_rows), made when the view is first built with integer
        # activations on: every call with int16 activations reads them (int8: calls of fewer rows than the
        # int8 tiles take, RS_INT16_MAX_ROWS in the kernels);
        # None for a part whose type has no packed form.
        self._packed: list[torch.Tensor | None] | None = None

    @classmethod
    def empty(
        cls, in_features: int, part_types: list[int], part_rows: list[int], int8_inputs: bool = False
    ) -> BlockLinear:
        parts = [
            meta((rows, BY_ID[type_id].row_bytes(in_features)), torch.uint8)
            for type_id, rows in zip(part_types, part_rows, strict=True)
        ]
        linear = cls(in_features, part_types, parts)
        linear.int8_inputs = int8_inputs
        return linear

    def _parts(self) -> list[torch.Tensor]:
        return [getattr(self, f"blocks_{index}") for index in range(len(self.part_types))]

    def kernel_view(self) -> native.RsLinear:
        """The C view of the buffers; rebuilt if they were replaced (e.g. by shared-memory tensors), and once
        integer activations are on, with the packed tiles."""
        parts = self._parts()
        view = self._view
        pack = self._packed is None and native.activation_dtype() != "float32"
        if pack:
            self._packed = [
                native.packed_rows(type_id, blocks)
                for type_id, blocks in zip(self.part_types, parts, strict=True)
            ]
        if (
            pack
            or view is None
            or any(view.parts[i].data != blocks.data_ptr() for i, blocks in enumerate(parts))
        ):
            view = self._view = native.linear_view(
                list(zip(self.part_types, parts, strict=True)), self.in_features, self._packed
            )
        view.int8_inputs = int(self.int8_inputs)
        return view

    @property
    def is_packed(self) -> bool:
        """Whether the kernel view was built with packed tiles (never with float32 activations)."""
        return self._packed is not None

    def drop_packed_file_pages(self, spans: list[tuple[int, int]]) -> int:
        """Gives back the file's pages of the rows the packed tiles hold (file_pages.drop_file_pages over
        ``spans``, file_pages.file_backed_spans): the bytes dropped."""
        if not self.is_packed:  # float32 activations: nothing packed, every row read from the file
            return 0
        tile = native.PACKED_TILE_ROWS
        return sum(
            drop_file_pages(blocks[: blocks.shape[0] // tile * tile], spans)
            for blocks, tiles in zip(self._parts(), self._packed, strict=True)
            if tiles is not None
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, self.in_features).to(torch.float32).contiguous()
        return native.linear_forward(self.kernel_view(), flat).view(*x.shape[:-1], self.out_features)

    def rows(self, ids: torch.Tensor) -> torch.Tensor:
        """Rows of W as float32: the embedding lookup when W is an embedding table."""
        return native.weight_rows(self.kernel_view(), ids.to(torch.int64).contiguous())


def prepare_kernel_views(model: nn.Module) -> int:
    """Builds every BlockLinear's kernel view of `model` now, with its packed tiles, rather than in the first
    request's time; then the file's pages those tiles replace leave this process's memory. The bytes given
    back. When nothing was packed (float32 activations) the process's mappings are not read."""
    linears = [module for module in model.modules() if isinstance(module, BlockLinear)]
    for linear in linears:
        linear.kernel_view()
    packed = [linear for linear in linears if linear.is_packed]
    if not packed:
        return 0
    spans = file_backed_spans()
    return sum(linear.drop_packed_file_pages(spans) for linear in packed)
