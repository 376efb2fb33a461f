"""Random valid rows of any tensor type: random bytes are valid blocks once their float16 scales are finite.

No quantiser is needed: whatever the codes, the gguf package's dequantisation says what the blocks mean.
"""

from __future__ import annotations

import gguf
import numpy as np
from gguf.quants import dequantize

from roles.model_files.tensor_types import BY_NAME

# Byte offsets of each block's float16 fields: the scale, then the min where the type has one.
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


def _floats(type_name: str, values: np.ndarray) -> np.ndarray:
    if type_name == "F16":
        return values.astype(np.float16).view(np.uint8)
    if type_name == "BF16":
        return (values.view(np.uint32) >> 16).astype(np.uint16).view(np.uint8)
    return values.view(np.uint8)


# min / scale that centres a type's values on zero for uniformly random codes (the mean code, in the sign
# the type's formula gives its min: w = d q + m for Q4_1 / Q5_1, w = d sc q - dmin m for the K-quants).
_CENTRING_MIN = {"Q4_1": -7.5, "Q5_1": -15.5, "Q2_K": 1.5, "Q4_K": 7.5, "Q5_K": 15.5}


def _set_halves(type_name: str, blocks: np.ndarray, values, min_ratio: float = 1.0) -> None:
    for index, offset in enumerate(HALF_FIELDS[type_name]):
        field = np.asarray(values, dtype=np.float32) * (min_ratio if index else 1.0)
        blocks[..., offset : offset + 2] = field.astype(np.float16)[..., None].view(np.uint8)


def random_rows(type_name: str, rows: int, cols: int, seed: int, std: float | None = None) -> np.ndarray:
    """(rows, row bytes) uint8: ``rows`` weights of ``cols`` columns in ``type_name``'s blocks.

    std None: random scales of either sign (every code path of the decoders). Else every scale of the weight
    is one positive value (and every min one value that centres the weights on zero), set so the weight's
    values have about that standard deviation: a random model of such weights keeps its activations in
    range."""
    rng = np.random.default_rng(seed)
    kind = BY_NAME[type_name]
    if kind.is_float:
        values = rng.standard_normal((rows, cols)) * (std or 0.1)
        return _floats(type_name, values.astype(np.float32))
    blocks = rng.integers(0, 256, size=(rows, cols // kind.block_size, kind.block_bytes), dtype=np.uint8)
    if std is None:
        _set_halves(type_name, blocks, rng.uniform(-0.05, 0.05, blocks.shape[:2]))
        return blocks.reshape(rows, -1)
    centring = _CENTRING_MIN.get(type_name, 1.0)
    _set_halves(type_name, blocks, 1.0, centring)
    spread = float(dequantize(blocks.reshape(rows, -1), gguf.GGMLQuantizationType[type_name]).std())
    _set_halves(type_name, blocks, std / spread, centring)
    return blocks.reshape(rows, -1)
