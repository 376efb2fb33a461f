"""The arithmetic behind bench/peers.py's GFLOP/s and GB/s figures, on tensor lists and cpuinfo text made
here, and on the bundled GGUF file."""

from __future__ import annotations

import pytest

from bench.roofline import LinearWeights, cpu_flags, cpu_model, gguf_linear_weights, linear_weights
from roles.model_files.model_path import resolve_model_path

TIED = [
    ("token_embd.weight", (64, 1000), 64000, 36000),
    ("blk.0.attn_q.weight", (64, 64), 4096, 2304),
    ("blk.0.ffn_down.weight", (128, 64), 8192, 4608),
    ("blk.0.attn_norm.weight", (64,), 64, 256),
    ("output_norm.weight", (64,), 64, 256),
]


def test_a_tied_head_counts_the_token_embedding_once():
    weights = linear_weights(TIED)
    assert weights == LinearWeights(
        params=64000 + 4096 + 8192, file_bytes=36000 + 2304 + 4608, head_params=64000
    )


def test_an_untied_head_counts_the_output_and_not_the_embedding():
    weights = linear_weights([*TIED, ("output.weight", (64, 1000), 64000, 72000)])
    assert weights == LinearWeights(
        params=64000 + 4096 + 8192, file_bytes=72000 + 2304 + 4608, head_params=64000
    )


def test_gflop_s_is_two_operations_per_weight_per_token():
    weights = LinearWeights(params=100_000_000, file_bytes=60_000_000)
    assert weights.gflop_s(50.0) == pytest.approx(2 * 100e6 * 50 / 1e9)


def test_a_load_runs_every_token_but_the_last_through_the_blocks_and_the_sampled_ones_through_the_head():
    weights = LinearWeights(params=1000, file_bytes=600, head_params=200)
    # 3 prompt tokens, 2 generated: the blocks run 3 + 2 - 1 = 4 tokens, the head 2 (the prompt's last and
    # the first generated one), 2 operations a weight each, over 2 generated tokens.
    assert weights.ops_per_generated_token(3, 2) == pytest.approx(2 * (800 * 4 + 200 * 2) / 2)
    # One generated token: the prompt alone, head once.
    assert weights.ops_per_generated_token(5, 1) == pytest.approx(2 * (800 * 5 + 200))
    # 3,600 operations a second on the linears: one generated token a second.
    assert weights.bound_tok_s(3600 / 1e9, 3, 2) == pytest.approx(1.0)


def test_gb_s_reads_the_file_bytes_or_the_converted_width():
    weights = LinearWeights(params=100_000_000, file_bytes=60_000_000)
    assert weights.gb_s(10.0) == pytest.approx(0.6)
    assert weights.gb_s(10.0, bytes_per_param=2) == pytest.approx(2.0)


def test_the_bundled_model_has_its_linears_counted():
    weights = gguf_linear_weights(str(resolve_model_path("smollm2")))
    # SmolLM2-135M: 30 blocks of 576-wide attention (3 KV heads of 64) and a 1536-wide FFN, tied head.
    per_block = 576 * 576 * 2 + 576 * 192 * 2 + 576 * 1536 * 3
    assert weights.params == 30 * per_block + 49152 * 576
    assert weights.head_params == 49152 * 576
    # Its blocks are Q4_1 (32 weights in 20 bytes), its tied embedding Q8_0 (32 weights in 34 bytes).
    assert weights.file_bytes == (weights.params - 49152 * 576) // 32 * 20 + 49152 * 576 // 32 * 34


def test_cpu_flags_are_read_from_the_first_flags_line():
    text = "model name\t: Some CPU\nflags\t\t: fpu sse avx2 avx512f avx512_bf16\nflags\t: avx_vnni\n"
    assert cpu_flags(text) == ["avx2", "avx512f", "avx512_bf16"]
    assert cpu_model(text) == "Some CPU"
    assert cpu_flags("processor\t: 0\n") == []
