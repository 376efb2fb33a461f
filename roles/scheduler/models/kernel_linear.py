"""A linear the CPU kernels run from a checkpoint's own blocks, held as arrays (no torch): the parts of its
output rows, each of its own tensor type, and once integer activations are on each part's whole tiles repacked
(``native.packed_rows``), which the calls then read instead of the file's blocks.

``BlockLinear`` (the op-by-op torch model's module) keeps one over its buffers; the one-call step's
``NativeModel`` keeps them directly.
"""

from __future__ import annotations

import numpy as np

from roles.scheduler.kernels import native
from roles.scheduler.kernels.isa import INT8_INPUT_KINDS
from roles.scheduler.models.file_pages import drop_file_pages


def takes_int8_inputs(prefix: str) -> bool:
    """Whether the linear whose tensors sit under ``prefix`` (e.g. "layers.0.o_proj.") is of INT8_INPUT_KINDS."""
    return prefix.rstrip(".").rsplit(".", 1)[-1] in INT8_INPUT_KINDS


class KernelLinear:
    """y = x @ W.T with W's output rows in ``len(part_types)`` parts of (rows, row bytes) uint8 blocks."""

    def __init__(
        self, in_features: int, part_types: list[int], parts: list[np.ndarray], int8_inputs: bool = False
    ):
        self.in_features = in_features
        self.part_types = list(part_types)
        self.parts = list(parts)
        self.out_features = sum(blocks.shape[0] for blocks in self.parts)
        # Whether exec.activation_dtype mixed rounds this linear's inputs to int8 (isa.INT8_INPUT_KINDS).
        self.int8_inputs = int8_inputs
        # Per part its whole tiles repacked, made when the view is first built with integer activations on:
        # every call with int16 activations reads them (int8: calls of fewer rows than the int8 tiles take,
        # RS_INT16_MAX_ROWS in the kernels); None for a part whose type has no packed form.
        self._packed: list | None = None
        self._view: native.RsLinear | None = None

    def holds(self, parts: list[np.ndarray]) -> bool:
        """Whether ``parts`` view the very memory this linear was made over."""
        return len(parts) == len(self.parts) and all(
            new.ctypes.data == old.ctypes.data for new, old in zip(parts, self.parts, strict=True)
        )

    def kernel_view(self) -> native.RsLinear:
        """The C view of the parts, built once (with the packed tiles when integer activations are on)."""
        integer = native.activation_dtype() != "float32"
        if self._view is None or (self._packed is None and integer):
            if integer:
                self._packed = [
                    native.packed_rows(type_id, blocks)
                    for type_id, blocks in zip(self.part_types, self.parts, strict=True)
                ]
            self._view = native.linear_view(
                list(zip(self.part_types, self.parts, strict=True)), self.in_features, self._packed
            )
        self._view.int8_inputs = int(self.int8_inputs)
        return self._view

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
            for blocks, tiles in zip(self.parts, self._packed, strict=True)
            if tiles is not None
        )


def prepare_views(linears: list[KernelLinear]) -> int:
    """Builds every linear's kernel view now, with its packed tiles, rather than in the first request's time;
    then the file's pages those tiles replace leave this process's memory. The bytes given back. When
    nothing was packed (float32 activations) the process's mappings are not read."""
    from roles.scheduler.models.file_pages import file_backed_spans

    for linear in linears:
        linear.kernel_view()
    packed = [linear for linear in linears if linear.is_packed]
    if not packed:
        return 0
    spans = file_backed_spans()
    return sum(linear.drop_packed_file_pages(spans) for linear in packed)
