"""A checkpoint's own blocks as the kernels run them, without changing any value.

- ``block_parts``: the blocks of the weights one linear stacks along its output rows (Q|K|V, gate|up), each
  weight a part of its own tensor type, as ``roles/scheduler/kernels/linear_kernels.h`` reads them: no
  float32 copy, and a view of the file's map where the rows are the file's.
"""

from __future__ import annotations

import numpy as np

from roles.model_files.gguf_checkpoint import RawQuantTensor

MAX_PARTS = 4  # RS_MAX_PARTS in linear_kernels.h


def block_parts(raws: list[RawQuantTensor]) -> dict[str, np.ndarray]:
    """``blocks_<i>`` (rows_i, row bytes_i) uint8 (views of the file's map) and ``block_types`` (parts,) int32
    ggml ids."""
    if not 0 < len(raws) <= MAX_PARTS:
        raise ValueError(f"a linear stacks 1 to {MAX_PARTS} weights; got {len(raws)}")
    arrays = {f"blocks_{i}": raw.blocks for i, raw in enumerate(raws)}
    arrays["block_types"] = np.array([raw.kind.type_id for raw in raws], dtype=np.int32)
    return arrays
