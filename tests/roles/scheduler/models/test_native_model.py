"""The model a scheduler serves in auto where the one-call step runs the whole file (``NativeModel``): built
from the file's arrays without torch, it gives the torch model's one-call logits bit for bit; a file the step
cannot run whole gets the torch model; rows whose scores would not fit one call go in several."""

from __future__ import annotations

import torch

from roles.scheduler.loading.from_file import load_engine_model, load_model
from roles.scheduler.models import native_decode
from roles.scheduler.models.native_model import NativeModel
from tests.family_checkpoints import write_family_checkpoint
from tests.kernel_gate import needs_kernels
from tests.paged_greedy import forced_decode_logits, greedy_decode_with_logits
from tests.tiny_checkpoint import write_tiny_llama

pytestmark = needs_kernels

PROMPTS = [[5, 6, 7, 8], [40, 41], list(range(60, 100))]  # lengths cross page boundaries


def _called(model: NativeModel):
    """The model as paged_greedy calls one: its logits as a tensor."""
    return lambda batch, kv: torch.from_numpy(model.forward(batch, kv))


def test_the_bundled_file_is_served_by_the_native_model_with_the_torch_models_logits_bit_for_bit():
    served, shape = load_engine_model("smollm2", weight_dtype="auto")
    assert isinstance(served, NativeModel)
    assert served.eos_token_ids  # from the file, as the torch model's
    reference, _ = load_model("smollm2", weight_dtype="auto")
    assert reference.native_decode_plan() is not None
    continuations, expected = greedy_decode_with_logits(reference, shape, PROMPTS, 10)
    ours = forced_decode_logits(_called(served), shape, PROMPTS, continuations)
    for mine, theirs in zip(ours, expected, strict=True):
        assert torch.equal(mine, theirs)


def test_a_file_the_one_call_step_cannot_run_whole_is_served_by_the_torch_model(tmp_path):
    path = write_family_checkpoint("gemma3", tmp_path / "gemma3")  # sandwich norms, windows, GELU
    served, _ = load_engine_model(str(path), weight_dtype="auto")
    assert isinstance(served, torch.nn.Module)
    served, _ = load_engine_model(str(write_tiny_llama(tmp_path / "tiny")), weight_dtype="exact")
    assert isinstance(served, torch.nn.Module)


def test_rows_whose_scores_pass_the_bound_run_in_several_calls_with_the_same_logits(tmp_path, monkeypatch):
    """A bound of 5 rows a call at this context: the 40-token prompt's prefill goes in 8 calls, each writing
    its rows' K/V before they attend, and its logits row is the 8th call's last."""
    served, shape = load_engine_model(str(write_tiny_llama(tmp_path / "tiny")), weight_dtype="auto")
    assert isinstance(served, NativeModel)
    continuations, _ = greedy_decode_with_logits(_called(served), shape, PROMPTS, 6)
    whole = forced_decode_logits(_called(served), shape, PROMPTS, continuations)
    calls = []
    decode_step = native_decode.native.decode_step
    monkeypatch.setattr(native_decode, "MAX_SCORES", shape.num_heads * 46 * 5)
    monkeypatch.setattr(
        native_decode.native,
        "decode_step",
        lambda model, step: calls.append(step.num_seqs) or decode_step(model, step),
    )
    split = forced_decode_logits(_called(served), shape, PROMPTS, continuations)
    assert max(calls) <= 5 and len(calls) > len(continuations[0])
    for mine, theirs in zip(split, whole, strict=True):
        assert torch.allclose(mine, theirs, atol=1e-4, rtol=1e-4)
