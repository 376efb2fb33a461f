"""The float types read by numpy alone give the gguf package's values bit for bit (NaN payloads included),
and a quantised type still goes through the package."""

from __future__ import annotations

import numpy as np
import pytest
from gguf import GGMLQuantizationType
from gguf.quants import dequantize, quantize

from roles.model_files.dequantized import dequantized
from roles.model_files.tensor_types import BY_NAME


@pytest.mark.parametrize("name, width", [("F32", 4), ("F16", 2), ("BF16", 2)])
def test_float_types_match_the_gguf_package_bit_for_bit(name, width):
    data = np.random.default_rng(3).integers(0, 256, (5, 96 * width), dtype=np.uint8)  # any bit pattern
    ours = dequantized(data, BY_NAME[name])
    reference = dequantize(data, GGMLQuantizationType[name]).astype(np.float32)
    assert ours.shape == reference.shape == (5, 96)
    assert ours.dtype == np.float32
    np.testing.assert_array_equal(ours.view(np.uint32), reference.view(np.uint32))


def test_a_quantised_type_is_the_gguf_packages_dequantisation():
    weights = np.random.default_rng(4).standard_normal((4, 64)).astype(np.float32)
    blocks = quantize(weights, GGMLQuantizationType.Q8_0)
    reference = dequantize(blocks, GGMLQuantizationType.Q8_0)
    np.testing.assert_array_equal(dequantized(blocks, BY_NAME["Q8_0"]), reference)
