"""Our Llama (paged KV cache) must decode greedily token-for-token like transformers on the same file."""

from __future__ import annotations

import pytest
import torch
import transformers

from roles.model_files.model_path import resolve_model_path
from roles.scheduler.loading.from_file import load_model
from tests.paged_greedy import greedy_decode
from tests.tiny_checkpoint import write_tiny_llama

NEW_TOKENS = 64
RAW_PROMPTS = [
    "The capital of France is",
    "def fibonacci(n):\n    ",
    "Once upon a time, in a small village by the sea,",
    "1, 2, 3, 5, 8, 13,",
]
CHAT_PROMPTS = [
    "What is the boiling point of water in Celsius?",
    "Write a haiku about autumn leaves.",
    "Translate to French: I love reading books in the evening.",
    "List three prime numbers larger than 100 and explain why they are prime. 🙂",
]


def _hf_greedy(model, prompt_ids: list[int], new_tokens: int) -> list[int]:
    ids = torch.tensor([prompt_ids])
    with torch.inference_mode():
        out = model.generate(
            ids, attention_mask=torch.ones_like(ids), max_new_tokens=new_tokens, do_sample=False
        )
    return out[0, len(prompt_ids) :].tolist()


def _assert_same_continuations(ours: list[list[int]], theirs: list[list[int]]) -> None:
    for index, (mine, reference) in enumerate(zip(ours, theirs, strict=True)):
        assert mine == reference, (
            f"prompt {index}: first difference at token {next(i for i, (a, b) in enumerate(zip(mine, reference, strict=False)) if a != b)}"
        )


@pytest.fixture(scope="module")
def smollm2(smollm2_reference_tokenizer):
    """(our model, shape, prompt ids, transformers' greedy continuations), computed once for the module."""
    path = resolve_model_path("smollm2")
    tokenizer = smollm2_reference_tokenizer
    reference = transformers.AutoModelForCausalLM.from_pretrained(
        path.parent, gguf_file=path.name, dtype=torch.float32
    )
    reference.generation_config.eos_token_id = None  # always 64 tokens, like our loop
    reference.generation_config.pad_token_id = tokenizer.pad_token_id
    prompts = [tokenizer(text).input_ids for text in RAW_PROMPTS]
    for text in CHAT_PROMPTS:
        chat = tokenizer.apply_chat_template(
            [{"role": "user", "content": text}], tokenize=False, add_generation_prompt=True
        )
        prompts.append(tokenizer(chat).input_ids)
    expected = [_hf_greedy(reference, p, NEW_TOKENS) for p in prompts]
    del reference
    model, shape = load_model("smollm2")
    return model, shape, prompts, expected


def test_smollm2_each_prompt_alone_matches_transformers(smollm2):
    model, shape, prompts, expected = smollm2
    ours = [greedy_decode(model, shape, [p], NEW_TOKENS)[0] for p in prompts]
    _assert_same_continuations(ours, expected)


def test_smollm2_all_prompts_in_one_batch_match_transformers(smollm2):
    model, shape, prompts, expected = smollm2
    ours = greedy_decode(model, shape, prompts, NEW_TOKENS, page_size=16)
    _assert_same_continuations(ours, expected)


def test_smollm2_chunked_prefill_mixed_with_decode_matches_transformers(smollm2):
    model, shape, prompts, expected = smollm2
    # Chunks of 5 make later chunks attend to cached K/V while other sequences already decode. The
    # first 24 tokens are enough here: what differs from the test above is the prefill.
    ours = greedy_decode(model, shape, prompts, 24, page_size=8, prefill_chunk=5)
    _assert_same_continuations(ours, [e[:24] for e in expected])


@pytest.mark.parametrize(
    "overrides",
    [{}, {"tie_word_embeddings": False, "rope_scaling": None, "seed": 1}],
    ids=["tied-llama3-rope", "untied-plain-rope"],
)
def test_tiny_random_llama_matches_transformers(tmp_path, overrides):
    folder = write_tiny_llama(tmp_path / "tiny", **overrides)
    reference = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    reference.generation_config.eos_token_id = None
    prompts = [[5, 17, 200, 3, 99, 42, 7], [250, 1, 2, 3], list(range(30, 90))]
    expected = [_hf_greedy(reference, p, 40) for p in prompts]
    model, shape = load_model(str(folder))
    expected_rope = None if overrides.get("rope_scaling", "llama3") is None else "llama3"
    assert (shape.rope_scaling or {}).get("rope_type") == expected_rope
    _assert_same_continuations([greedy_decode(model, shape, [p], 40)[0] for p in prompts], expected)
    _assert_same_continuations(
        greedy_decode(model, shape, prompts, 40, page_size=4, prefill_chunk=6), expected
    )
