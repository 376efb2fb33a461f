"""How each tensor type of a file runs in each weight mode, read from headers: the rows inspect shows."""

from __future__ import annotations

from roles.model_files.weight_formats import format_rows, model_tensors, slower_tensors
from tests.kquant_checkpoint import LAYER_TYPES, write_kquant_llama
from tests.tiny_checkpoint import write_tiny_llama


def _rows(path, weight_dtype):
    return {
        (row.type_name, row.runs_as): row.tensors
        for row in format_rows(model_tensors(str(path)), weight_dtype)
    }


def test_auto_runs_every_type_of_a_mixed_file_on_the_kernels(tmp_path):
    path = write_kquant_llama(tmp_path / "mixed.gguf")
    rows = _rows(path, "auto")
    expected_types = {t for layer in LAYER_TYPES for t in layer.values()} | {"Q4_K", "Q6_K"}
    assert {t for t, how in rows if how == f"{t} blocks on the CPU kernels"} == expected_types
    assert rows[("F32", "float32")] == 1 + 2 * len(LAYER_TYPES)  # the norms
    assert rows[("Q6_K", "Q6_K blocks on the CPU kernels")] == 1 + 1 + 1  # output, layer 0's attn_v, ffn_down
    assert slower_tensors(model_tensors(str(path)), "auto") == []


def test_exact_and_int_modes_say_what_they_convert_to(tmp_path):
    path = write_kquant_llama(tmp_path / "mixed.gguf")
    assert ("Q4_K", "float32, dequantised") in _rows(path, "exact")
    int4 = _rows(path, "int4")
    assert int4[("Q4_1", "int4 groups of 32 (the file's own Q4_1 blocks)")] == 1
    assert ("Q6_K", "int8 per output channel (requantised from float32)") in int4  # the head
    assert ("Q4_K", "float32 lookups (the head, when tied: int8 per output channel)") in int4  # the embedding


def test_a_width_the_kernels_cannot_take_is_a_slower_path_named_with_its_reason(tmp_path):
    folder = write_tiny_llama(
        tmp_path / "narrow", hidden_size=48, num_attention_heads=4, num_key_value_heads=2
    )
    slower = dict(slower_tensors(model_tensors(str(folder)), "auto"))
    assert slower["model.layers.0.self_attn.q_proj.weight"] == (
        "float32, op by op (48 input columns are not a multiple of 32)"
    )
    assert "model.layers.0.mlp.down_proj.weight" not in slower  # 128 input columns: on the kernels
