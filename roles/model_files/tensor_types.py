"""The GGUF tensor types roleserve runs: one row per type with its ggml id and block layout.

Every type here is read in place by the CPU kernels (``roles/scheduler/kernels/block_decode.h`` decodes
each one from the file's blocks) and dequantised to float32 for ``exec.weight_dtype: exact`` by the ``gguf``
package's ``quants.py``, the reference. A file holding a tensor of any other type is refused before anything
starts (``roles.model_files.tensor_check``). Adding a type is a row here plus its decoder there.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TensorType:
    name: str  # as gguf.GGMLQuantizationType names it
    type_id: int  # the ggml id a GGUF file stores
    block_size: int  # weights per block
    block_bytes: int  # bytes per block

    @property
    def is_float(self) -> bool:
        return self.block_size == 1

    def row_bytes(self, cols: int) -> int:
        return cols // self.block_size * self.block_bytes


_ROWS = (
    TensorType("F32", 0, 1, 4),
    TensorType("F16", 1, 1, 2),
    TensorType("BF16", 30, 1, 2),
    TensorType("Q4_0", 2, 32, 18),
    TensorType("Q4_1", 3, 32, 20),
    TensorType("Q5_0", 6, 32, 22),
    TensorType("Q5_1", 7, 32, 24),
    TensorType("Q8_0", 8, 32, 34),
    TensorType("IQ4_NL", 20, 32, 18),
    TensorType("Q2_K", 10, 256, 84),
    TensorType("Q3_K", 11, 256, 110),
    TensorType("Q4_K", 12, 256, 144),
    TensorType("Q5_K", 13, 256, 176),
    TensorType("Q6_K", 14, 256, 210),
    TensorType("IQ4_XS", 23, 256, 136),
)
KERNEL_GROUP = 32  # the kernels walk every row in groups of 32 weights
INT4_GROUP = 32  # torch's int4 kernel (exec.weight_dtype int4) quantises groups of 32 inputs
BY_ID = {row.type_id: row for row in _ROWS}
BY_NAME = {row.name: row for row in _ROWS}
SUPPORTED_NAMES = tuple(row.name for row in _ROWS)


def kernel_refusal(type_name: str, cols: int) -> str | None:
    """Why the kernels cannot run a (type, in_features) weight, or None when they can: only a float type
    can have a width that is not a whole number of 32-weight groups."""
    if type_name not in BY_NAME:
        return f"the kernels do not run {type_name}"
    if cols % KERNEL_GROUP:
        return f"{cols} input columns are not a multiple of {KERNEL_GROUP}"
    return None


def type_name(type_id: int) -> str:
    """The name of any ggml type id, supported or not ("type 99" for an id no ggml release knows)."""
    if type_id in BY_ID:
        return BY_ID[type_id].name
    import gguf

    try:
        return gguf.GGMLQuantizationType(type_id).name
    except ValueError:
        return f"type {type_id}"
