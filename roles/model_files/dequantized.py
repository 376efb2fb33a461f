"""A GGUF tensor's blocks as float32: the float types by numpy alone, every quantised type through the gguf
package, the reference `exact` is held to.

The float types need no package: F32 is the bytes themselves, F16 widens exactly, and BF16 is the top half of
a float32. Reading them without the gguf package keeps its import (about 50 ms) out of a start-up that reads
only float norms and hands the quantised blocks to the kernels as they are.
"""

from __future__ import annotations

import numpy as np

from roles.model_files.tensor_types import TensorType


def dequantized(data: np.ndarray, kind: TensorType) -> np.ndarray:
    """(rows, bytes per row) uint8 of ``kind`` -> (rows, columns) float32, a new array or a read-only view."""
    rows = data.shape[0] if data.ndim > 1 else 1
    flat = np.ascontiguousarray(data).reshape(-1)
    if kind.name == "F32":
        return flat.view(np.float32).reshape(rows, -1)
    if kind.name == "F16":
        return flat.view(np.float16).astype(np.float32).reshape(rows, -1)
    if kind.name == "BF16":
        return (flat.view(np.uint16).astype(np.uint32) << 16).view(np.float32).reshape(rows, -1)
    from gguf import GGMLQuantizationType
    from gguf.quants import dequantize

    return dequantize(data, GGMLQuantizationType(kind.type_id)).astype(np.float32, copy=False)
