"""A GGUF mixing every tensor type (``tests.kquant_checkpoint``) runs each tensor on its own type's kernel.

- exact (every type dequantised by the gguf package) decodes token for token like transformers on the
  same dequantised weights;
- auto (the file's blocks on the kernels: prefill, batched and one-call decode steps) keeps >= 98% top-1
  agreement with exact, teacher forced on exact's greedy tokens;
- auto holds the file's blocks, not float32: the model's weights take the bytes the file's tensors take.
"""

from __future__ import annotations

import pytest
import torch
import transformers

from roles.model_files.tensor_types import BY_ID
from roles.scheduler.loading.from_file import load_model
from roles.scheduler.models.block_linear import BlockLinear
from tests.kquant_checkpoint import LAYER_TYPES, write_dequantised_folder, write_kquant_llama
from tests.paged_greedy import forced_decode_logits, greedy_decode, greedy_decode_with_logits

PROMPTS = [[5, 17, 200, 3, 99, 42, 7], [250], [31, 1, 2, 3], list(range(30, 90))]
NEW_TOKENS = 24
MIN_TOP1_AGREEMENT = 0.98


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    return str(write_kquant_llama(tmp_path_factory.mktemp("mixed") / "mixed.gguf"))


@pytest.fixture(scope="module")
def exact(mixed):
    return load_model(mixed, "exact")


def _transformers_greedy(folder) -> list[list[int]]:
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    out = []
    for prompt in PROMPTS:
        ids = torch.tensor([prompt])
        with torch.inference_mode():
            tokens = model.generate(
                ids,
                attention_mask=torch.ones_like(ids),
                max_new_tokens=NEW_TOKENS,
                do_sample=False,
                eos_token_id=None,
                pad_token_id=0,
            )
        out.append(tokens[0, len(prompt) :].tolist())
    return out


def test_exact_decodes_like_transformers_on_the_dequantised_weights(mixed, exact, tmp_path):
    model, shape = exact
    expected = _transformers_greedy(write_dequantised_folder(mixed, tmp_path / "hf"))
    assert greedy_decode(model, shape, PROMPTS, NEW_TOKENS, page_size=8, prefill_chunk=16) == expected


def test_auto_runs_each_tensor_in_its_own_type_and_agrees_with_exact(mixed, exact):
    model, shape = exact
    continuations, exact_logits = greedy_decode_with_logits(model, shape, PROMPTS, NEW_TOKENS)
    auto, _ = load_model(mixed, "auto")
    layer = auto.layers[1]
    assert isinstance(layer.qkv_proj, BlockLinear)
    assert [BY_ID[t].name for t in layer.qkv_proj.part_types] == [
        LAYER_TYPES[1][k] for k in ("attn_q", "attn_k", "attn_v")
    ]
    assert [BY_ID[t].name for t in auto.layers[2].gate_up_proj.part_types] == ["F16", "BF16"]
    assert auto.native_decode_plan() is not None
    logits = forced_decode_logits(auto, shape, PROMPTS, continuations)
    agree = sum(int((a.argmax(-1) == e.argmax(-1)).sum()) for a, e in zip(logits, exact_logits, strict=True))
    total = sum(e.shape[0] for e in exact_logits)
    print(f"auto vs exact top-1 agreement on the mixed file: {agree}/{total} = {agree / total:.4f}")
    assert agree / total >= MIN_TOP1_AGREEMENT, f"top-1 agreement {agree / total:.4f} over {total} positions"


def test_auto_holds_the_files_blocks_not_float32(mixed):
    from roles.model_files.gguf_checkpoint import GGUFCheckpoint

    checkpoint = GGUFCheckpoint(mixed)
    file_bytes = sum(checkpoint.tensor_nbytes(info) for info in checkpoint.tensor_infos.values())
    auto, _ = load_model(mixed, "auto")
    held = sum(t.numel() * t.element_size() for t in [*auto.parameters(), *auto.buffers()])
    assert held <= 1.01 * file_bytes, f"the model holds {held} bytes for {file_bytes} bytes of tensors"
