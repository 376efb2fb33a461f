"""Mixtral and Qwen2-MoE through the Engine decode greedily token-for-token like transformers on the same
folder: each prompt alone and all in one batch of different lengths, in exact and auto modes."""

from __future__ import annotations

import pytest
import torch
import transformers

from roles.protocol import SamplingFields
from roles.scheduler.engine.core import Engine
from roles.scheduler.engine.settings import engine_config
from tests.moe_checkpoint import write_tiny_mixtral, write_tiny_qwen2_moe

NEW_TOKENS = 24
GREEDY = SamplingFields(temperature=0, max_tokens=NEW_TOKENS, ignore_eos=True)
PROMPTS = [[5, 17, 200, 3, 99, 42, 7], [250], [31, 1, 2, 3], list(range(30, 90))]
CHECKPOINTS = {
    "mixtral": lambda path: write_tiny_mixtral(path),
    "qwen2_moe": lambda path: write_tiny_qwen2_moe(path),
    "qwen2_moe-norm_topk_prob": lambda path: write_tiny_qwen2_moe(path, norm_topk_prob=True, seed=1),
}


def _hf_greedy(model, prompt_ids: list[int]) -> list[int]:
    ids = torch.tensor([prompt_ids])
    with torch.inference_mode():
        out = model.generate(
            ids, attention_mask=torch.ones_like(ids), max_new_tokens=NEW_TOKENS, do_sample=False
        )
    return out[0, len(prompt_ids) :].tolist()


@pytest.fixture(scope="module", params=sorted(CHECKPOINTS))
def checkpoint(request, tmp_path_factory):
    """(folder, transformers' greedy continuation of each prompt)."""
    folder = CHECKPOINTS[request.param](tmp_path_factory.mktemp(request.param))
    reference = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    reference.generation_config.eos_token_id = None
    return str(folder), [_hf_greedy(reference, p) for p in PROMPTS]


def _engine(path: str, weight_dtype: str, **overrides) -> Engine:
    settings = dict(max_running_requests=8, chunked_prefill_size=32, kv_cache_tokens=1024, page_size=8)
    return Engine(engine_config(model_path=path, weight_dtype=weight_dtype, **{**settings, **overrides}))


@pytest.mark.parametrize("weight_dtype", ["exact", "auto"])
def test_each_prompt_alone_matches_transformers(checkpoint, weight_dtype):
    path, expected = checkpoint
    engine = _engine(path, weight_dtype, enable_prefix_cache=False)
    assert engine.model.native_decode_plan() is None  # the kernels' one-call decoder has no experts
    assert [engine.generate([p], GREEDY)[0] for p in PROMPTS] == expected


@pytest.mark.parametrize("weight_dtype", ["exact", "auto"])
def test_mixed_batch_matches_transformers(checkpoint, weight_dtype):
    path, expected = checkpoint
    # The 60-token prompt is prefilled in chunks of 32 while the others already decode.
    assert _engine(path, weight_dtype).generate(PROMPTS, GREEDY) == expected
