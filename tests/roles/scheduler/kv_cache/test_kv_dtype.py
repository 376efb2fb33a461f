"""memory.kv_cache_dtype auto: float16 only where int8 activations already round a file's quantised linears."""

import pytest

from roles.model_files.model_path import ModelFileError
from roles.model_files.weight_formats import WeightTensor, model_tensors
from roles.scheduler.kernels.isa import missing_flags
from roles.scheduler.kv_cache.kv_dtype import derived_kv_dtype, int8_rounds, kv_dtype_for
from tests.kquant_checkpoint import LAYER_TYPES, write_kquant_llama

needs_kernels = pytest.mark.skipif(
    bool(missing_flags("avx2")),
    reason=f"this CPU lacks {', '.join(missing_flags('avx2'))} (the kernels' baseline)",
)
FLOAT_LAYER = {name: "F16" for name in LAYER_TYPES[0]}


@pytest.mark.parametrize(
    "weight_dtype, path, activations, rounded, expected",
    [
        ("auto", "avx2", "int8", True, "float16"),
        ("auto", "avx512vnni", "int8", True, "float16"),
        ("auto", "avx2", "int8", False, "float32"),  # float weights (or Q8_0 on avx2): int8 rounds nothing
        ("auto", "avx2", "int16", True, "float32"),
        ("auto", "avx2", "mixed", True, "float32"),
        ("auto", "avx2", "float32", True, "float32"),
        ("auto", None, "int8", True, "float32"),  # the kernels cannot run: exact instead
        ("exact", "avx2", "int8", True, "float32"),
        ("int8", "avx2", "int8", True, "float32"),
    ],
)
def test_float16_only_where_int8_rounds_quantised_linears(weight_dtype, path, activations, rounded, expected):
    assert kv_dtype_for(weight_dtype, path, activations, rounded) == expected


def test_int8_rounds_looks_at_the_layers_quantised_linears_on_the_path():
    def tensor(kind, type_name):
        return WeightTensor("t", type_name, 256, kind)

    assert int8_rounds([tensor("linear", "F16"), tensor("linear", "Q4_K")], "avx2")
    # a quantised embedding or head beside float layers: int8 rounds no layer's inputs
    assert not int8_rounds(
        [tensor("embedding", "Q4_K"), tensor("head", "Q6_K"), tensor("linear", "BF16")], "avx2"
    )
    assert not int8_rounds([tensor("vector", "F32"), tensor("router", "F32")], "avx512vnni")
    # Q8_0's codes need 8 bits: int16 on avx2 (vpmaddubsw), int8 with VNNI (vpdpbusd); float types never
    assert not int8_rounds([tensor("linear", "Q8_0")], "avx2")
    assert int8_rounds([tensor("linear", "Q8_0")], "avx512vnni")
    assert not int8_rounds([tensor("linear", "F16")], "avx512vnni")
    assert not int8_rounds([tensor("linear", "Q4_K")], "avx512")  # no int8 tiles there


@needs_kernels
def test_the_bundled_file_takes_float16_by_default():
    assert derived_kv_dtype("smollm2", "auto", "auto", "int8") == "float16"
    assert derived_kv_dtype("smollm2", "auto", "auto", "int16") == "float32"
    assert derived_kv_dtype("smollm2", "exact", "auto", "int8") == "float32"
    assert derived_kv_dtype("smollm2", "auto", "avx2", "int8") == "float16"


@needs_kernels
def test_a_file_is_read_for_its_layers_types(tmp_path):
    """Two files written with the gguf package: float layers (with a K-quant embedding and head) stay float32;
    one quantised linear in a layer makes it float16."""
    float_layers = write_kquant_llama(tmp_path / "float.gguf", layer_types=(FLOAT_LAYER,))
    one_quantised = write_kquant_llama(
        tmp_path / "one.gguf", layer_types=(FLOAT_LAYER, {**FLOAT_LAYER, "ffn_up": "Q4_0"})
    )
    assert {t.type_name for t in model_tensors(str(float_layers)) if t.kind == "linear"} == {"F16"}
    assert derived_kv_dtype(str(float_layers), "auto", "auto", "int8") == "float32"
    assert derived_kv_dtype(str(one_quantised), "auto", "auto", "int8") == "float16"


def test_an_unreadable_file_is_named(tmp_path):
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF not really")
    with pytest.raises(ModelFileError, match="broken.gguf"):
        derived_kv_dtype(str(broken), "auto", "auto", "int8")
