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
from roles.scheduler.models.kernel_linear import KernelLinear, prepare_views
from roles.scheduler.models.placeholders import meta


class BlockLinear(nn.Module):
    """y = x @ W.T with W's output rows in ``len(part_types)`` parts of (rows, row bytes) uint8 blocks: buffers
    the state loader fills, run by a ``KernelLinear`` over them."""

    def __init__(self, in_features: int, part_types: list[int], parts: list[torch.Tensor]):
        super().__init__()
        self.in_features = in_features
        self.out_features = sum(blocks.shape[0] for blocks in parts)
        self.part_types = list(part_types)
        self.register_buffer("block_types", torch.tensor(self.part_types, dtype=torch.int32))
        for index, blocks in enumerate(parts):
            self.register_buffer(f"blocks_{index}", blocks)
        # Whether exec.activation_dtype mixed rounds this linear's inputs to int8 (INT8_INPUT_KINDS).
        self.int8_inputs = False
        self._kernel: KernelLinear | None = None

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

    def kernel(self) -> KernelLinear:
        """The kernels' linear over the current buffers (their numpy views): made again if they were replaced
        (e.g. by shared-memory tensors)."""
        parts = [blocks.numpy() for blocks in self._parts()]
        if self._kernel is None or not self._kernel.holds(parts):
            self._kernel = KernelLinear(self.in_features, self.part_types, parts)
        self._kernel.int8_inputs = self.int8_inputs
        return self._kernel

    def kernel_view(self) -> native.RsLinear:
        """The C view of the buffers, with the packed tiles once integer activations are on."""
        return self.kernel().kernel_view()

    @property
    def is_packed(self) -> bool:
        """Whether the kernel view was built with packed tiles (never with float32 activations)."""
        return self._kernel is not None and self._kernel.is_packed

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, self.in_features).to(torch.float32).contiguous()
        return native.linear_forward(self.kernel_view(), flat).view(*x.shape[:-1], self.out_features)

    def rows(self, ids: torch.Tensor) -> torch.Tensor:
        """Rows of W as float32: the embedding lookup when W is an embedding table."""
        return native.weight_rows(self.kernel_view(), ids.to(torch.int64).contiguous())


def prepare_kernel_views(model: nn.Module) -> int:
    """kernel_linear.prepare_views over every BlockLinear of ``model``: the bytes of the file given back."""
    return prepare_views([module.kernel() for module in model.modules() if isinstance(module, BlockLinear)])
