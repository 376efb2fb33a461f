"""Random valid rows of any tensor type: random bytes are valid blocks once their float16 scales are finite.

No quantiser is needed: whatever the codes, the gguf package's dequantisation says what the blocks mean.
"""

from __future__ import annotations

import numpy as np

from roles.model_files.tensor_types import BY_NAME

# Byte offsets of each block's float16 fields (scales, mins); they get finite values of a sensible size.
HALF_FIELDS = {
    "Q4_0": (0,),
    "Q4_1": (0, 2),
    "Q5_0": (0,),
    "Q5_1": (0, 2),
    "Q8_0": (0,),
    "IQ4_NL": (0,),
    "Q2_K": (80, 82),
    "Q3_K": (108,),
    "Q4_K": (0, 2),
    "Q5_K": (0, 2),
    "Q6_K": (208,),
    "IQ4_XS": (0,),
}


def random_rows(type_name: str, rows: int, cols: int, seed: int) -> np.ndarray:
    """(rows, row bytes) uint8: ``rows`` weights of ``cols`` columns in ``type_name``'s blocks."""
    rng = np.random.default_rng(seed)
    kind = BY_NAME[type_name]
    if kind.is_float:
        values = rng.standard_normal((rows, cols)).astype(np.float32) * 0.1
        if type_name == "F16":
            return values.astype(np.float16).view(np.uint8)
        if type_name == "BF16":
            return (values.view(np.uint32) >> 16).astype(np.uint16).view(np.uint8)
        return values.view(np.uint8)
    blocks = rng.integers(0, 256, size=(rows, cols // kind.block_size, kind.block_bytes), dtype=np.uint8)
    for offset in HALF_FIELDS[type_name]:
        halves = rng.uniform(-0.05, 0.05, (rows, blocks.shape[1], 1)).astype(np.float16)
        blocks[..., offset : offset + 2] = halves.view(np.uint8)
    return blocks.reshape(rows, -1)
