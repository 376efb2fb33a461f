"""exec.weight_dtype auto: the file's own blocks on our kernels, and the one-call decode step.

- The one-call decode step gives the same logits as the op-by-op torch path of the same model.
- Against exact float32 (teacher forced on exact's own greedy tokens), top-1 agreement on 16 prompts.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest
import torch

from roles.scheduler.kernels import native
from roles.scheduler.kernels.isa import ROUNDS_TO_BF16
from roles.scheduler.loading import weight_mode
from roles.scheduler.loading.from_file import load_model
from tests.family_checkpoints import write_family_checkpoint
from tests.kernel_gate import needs_kernels
from tests.paged_greedy import forced_decode_logits, greedy_decode, greedy_decode_with_logits
from tests.tiny_checkpoint import write_tiny_llama

pytestmark = needs_kernels


def _native_and_torch_logits(model, shape, prompts, steps, kv_dtype=np.float32):
    continuations, _ = greedy_decode_with_logits(model, shape, prompts, steps)
    native_logits = forced_decode_logits(model, shape, prompts, continuations, kv_dtype=kv_dtype)
    model._native_decode = False  # the op-by-op path for every step
    torch_logits = forced_decode_logits(model, shape, prompts, continuations, kv_dtype=kv_dtype)
    model._native_decode = None
    return native_logits, torch_logits


def test_one_call_decode_step_equals_the_op_by_op_path_on_a_float_checkpoint(tmp_path):
    model, shape = load_model(str(write_tiny_llama(tmp_path / "tiny")), weight_dtype="auto")
    assert model.native_decode_plan() is not None  # float32 linears run as F32 parts on the kernels
    prompts = [[5, 6, 7, 8], [40, 41], list(range(60, 100))]  # lengths cross page boundaries
    native_logits, torch_logits = _native_and_torch_logits(model, shape, prompts, steps=20)
    for ours, theirs in zip(native_logits, torch_logits, strict=True):
        assert torch.allclose(ours, theirs, atol=1e-4, rtol=1e-4)


# The step's attention takes up to 3 query heads of a KV head per pass and 32 or 8 value columns per register
# block, and a head_dim that is not a multiple of 8 one float at a time: (hidden, heads, KV heads) ->
# head_dim 16 in 2-head groups (the tiny default); 40 in groups of 4 (3 + 1 heads, 32 + 8 columns); 32 in
# groups of 3; 12 (scalar).
ATTENTION_SHAPES = {
    "d16-g2": {},
    "d40-g4": dict(hidden_size=160, num_attention_heads=4, num_key_value_heads=1),
    "d32-g3": dict(hidden_size=192, num_attention_heads=6, num_key_value_heads=2),
    "d12-g2": dict(hidden_size=96, num_attention_heads=8, num_key_value_heads=4),
}


def _attention_prompts(many: bool) -> list[list[int]]:
    """3 sequences: the step attends by (sequence, KV head). Many (4 a thread or more): by sequence, every KV
    head of a page in turn. Lengths end mid-page and mid-way through a block of 4 keys."""
    prompts = [[5, 6, 7, 8, 9], [40, 41], list(range(60, 97))]
    if not many:
        return prompts
    return [list(range(3 + i, 3 + i + 2 + 7 * i % 41)) for i in range(4 * native.threads() + 1)]


@pytest.mark.parametrize("many", [False, True], ids=["few-sequences", "many-sequences"])
@pytest.mark.parametrize("kv_dtype", [np.float32, np.float16])
@pytest.mark.parametrize("dims", sorted(ATTENTION_SHAPES))
def test_one_call_attention_equals_the_op_by_op_path_for_each_head_layout_and_kv_dtype(
    tmp_path, dims, kv_dtype, many
):
    """Both paths over one KV cache of each dtype, with few sequences and with many. A float16 cache rounds K
    and V to nearest even in both, but the two paths' K and V differ in float32's last place, which now and
    then lands on the other side of a float16 rounding: a looser bound."""
    folder = write_tiny_llama(tmp_path / dims, **ATTENTION_SHAPES[dims])
    model, shape = load_model(str(folder), weight_dtype="auto")
    assert model.native_decode_plan() is not None
    prompts = _attention_prompts(many)
    native_logits, torch_logits = _native_and_torch_logits(model, shape, prompts, steps=14, kv_dtype=kv_dtype)
    bound = 1e-4 if kv_dtype == np.float32 else 2e-3
    for ours, theirs in zip(native_logits, torch_logits, strict=True):
        assert torch.allclose(ours, theirs, atol=bound, rtol=bound)


def test_one_call_step_splits_a_long_context_along_its_positions(tmp_path):
    """One sequence of 2 KV heads on 2 threads is fewer (sequence, KV head) items than two per thread: the step
    splits each along its positions (64 or more a part) and merges the parts by their softmax statistics. The
    logits still equal the op-by-op path's, over contexts from 260 to 275 positions."""
    model, shape = load_model(str(write_tiny_llama(tmp_path / "tiny")), weight_dtype="auto")
    native.set_threads(2)
    try:
        native_logits, torch_logits = _native_and_torch_logits(model, shape, [list(range(3, 263))], steps=16)
    finally:
        native.set_threads(0)
    for ours, theirs in zip(native_logits, torch_logits, strict=True):
        assert torch.allclose(ours, theirs, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("family", ["qwen2", "qwen3"])
def test_one_call_decode_step_takes_qkv_biases_and_qk_norms(tmp_path, family):
    """Qwen 2's Q/K/V biases and Qwen 3's per-head Q/K norms run inside the one-call step, same logits."""
    model, shape = load_model(str(write_family_checkpoint(family, tmp_path / family)), weight_dtype="auto")
    assert model.native_decode_plan() is not None
    prompts = [[5, 6, 7, 8], [40, 41], list(range(60, 100))]
    native_logits, torch_logits = _native_and_torch_logits(model, shape, prompts, steps=12)
    for ours, theirs in zip(native_logits, torch_logits, strict=True):
        assert torch.allclose(ours, theirs, atol=1e-4, rtol=1e-4)


def test_widths_the_kernels_cannot_take_run_op_by_op(tmp_path):
    """hidden_size 48 is not a multiple of the kernels' 32-column groups: no one-call plan, same tokens."""
    folder = write_tiny_llama(
        tmp_path / "narrow", hidden_size=48, num_attention_heads=4, num_key_value_heads=2
    )
    model, shape = load_model(str(folder), weight_dtype="auto")
    assert model.native_decode_plan() is None
    exact, _ = load_model(str(folder), weight_dtype="exact")
    prompts = [[5, 6, 7, 8], [40, 41]]
    assert greedy_decode(model, shape, prompts, 12) == greedy_decode(exact, shape, prompts, 12)


@pytest.fixture(scope="module")
def bundled_auto():
    return load_model("smollm2", weight_dtype="auto")


def test_one_call_decode_step_equals_the_op_by_op_path_on_the_bundled_gguf(bundled_auto, kernel_isa):
    """The prompts' prefill and the decodes, both paths. On a BF16 path the linears' inputs round to 8
    significant bits, so float32 differences of the last place before them (the two paths' attention and norms
    sum in other orders) can move an input by one bfloat16 step: a looser bound there."""
    model, shape = bundled_auto
    native_logits, torch_logits = _native_and_torch_logits(model, shape, PROMPTS[:5], steps=12)
    bound = 1e-2 if kernel_isa in ROUNDS_TO_BF16 else 1e-3
    for ours, theirs in zip(native_logits, torch_logits, strict=True):
        assert (ours - theirs).abs().max() < bound * theirs.abs().max()
        assert torch.equal(ours.argmax(-1), theirs.argmax(-1))


def test_steps_mixing_prefill_chunks_and_decodes_match_the_op_by_op_path(bundled_auto):
    """Chunked prefill of longer prompts while shorter ones already decode: split across the two paths."""
    model, shape = bundled_auto
    prompts = [PROMPTS[0], list(range(300, 340)), list(range(500, 570))]
    mixed = greedy_decode(model, shape, prompts, max_new_tokens=10, prefill_chunk=16)
    model._native_decode = False
    try:
        ops_only = greedy_decode(model, shape, prompts, max_new_tokens=10, prefill_chunk=16)
    finally:
        model._native_decode = None
    assert mixed == ops_only


PROMPTS = [  # 16 prompts of token ids: English, code, numbers, chat-like, random
    [504, 3575, 282, 4649, 314],
    [1604, 3987, 46477, 24, 94, 727, 2367],
    [6403, 1980, 253, 655, 28, 281, 253, 1165, 6560, 411, 260, 3426, 28],
    [33, 28, 216, 34, 28, 216, 35, 28, 216, 37, 28, 216, 40, 28],
    *[[int(t) for t in np.random.default_rng(seed).integers(100, 20000, 6 + seed)] for seed in range(12)],
]
MIN_TOP1_AGREEMENT = 0.98


@pytest.mark.parametrize(
    "activations, kv_dtype",
    [("float32", np.float32), ("float32", np.float16), ("int8", np.float16)],
)
def test_auto_agrees_with_exact_float32(bundled_auto, activations, kv_dtype):
    """Teacher forced on exact's greedy tokens: the prompt through the prefill path, then one-call decode steps;
    over a float32 KV cache, and over a float16 one (exact's stays float32); and as the server runs by default,
    int8 activations over a float16 cache (memory.kv_cache_dtype auto, roles/scheduler/kv_cache/kv_dtype.py)."""
    exact, shape = load_model("smollm2", weight_dtype="exact")
    continuations, exact_logits = greedy_decode_with_logits(exact, shape, PROMPTS, 24)
    model, _ = bundled_auto
    native.set_activation_dtype(activations)
    logits = forced_decode_logits(model, shape, PROMPTS, continuations, kv_dtype=kv_dtype)
    agree = sum(int((a.argmax(-1) == e.argmax(-1)).sum()) for a, e in zip(logits, exact_logits, strict=True))
    total = sum(e.shape[0] for e in exact_logits)
    assert agree / total >= MIN_TOP1_AGREEMENT, f"top-1 agreement {agree / total:.4f} over {total} positions"


def test_auto_falls_back_to_exact_with_a_reason_where_the_kernels_cannot_run(monkeypatch, caplog):
    monkeypatch.setattr(native, "unavailable_reason", lambda: "this CPU lacks avx2")
    with caplog.at_level(logging.WARNING, logger="roleserve.scheduler"):
        assert weight_mode.runnable_weight_dtype("auto") == "exact"
    assert "this CPU lacks avx2" in caplog.text
    assert weight_mode.runnable_weight_dtype("int4") == "int4"
