"""Tiny random checkpoints of every family, written by transformers' own config and model
classes, with the byte-level BPE tokenizer of ``tests.tiny_checkpoint`` so a folder also converts and serves.

Norm weights and biases are moved off the values transformers starts them at (ones, zeros), so that every
norm and bias a family adds is tested. Each family sets what makes it itself: Llama 3's llama3 rope scaling (converted into a GGUF's rope_freqs.weight),
Mistral's and Phi-3's sliding windows, Qwen 2's biases, Qwen 3's Q/K norms, Gemma 3's six layers (five local, one
global: llama.cpp's pattern) with soft-capping, and the experts of Mixtral, Qwen2-MoE (with its shared
expert) and Qwen3-MoE. Windows are 8 or 16 positions, shorter
than the prompts the tests use.
"""

from __future__ import annotations

import json
import pathlib

import torch

from tests.tiny_checkpoint import LLAMA3_ROPE_SCALING, TINY_DIMS, _write_tokenizer

_SHARED = dict(
    TINY_DIMS,
    intermediate_size=128,
    # Wider than HF's 0.02 so logits are spread out: greedy argmax is never decided by rounding noise.
    initializer_range=0.2,
    bos_token_id=0,
    eos_token_id=2,
    pad_token_id=0,
)

# family -> (transformers config class, model class, config fields)
FAMILY_CHECKPOINTS = {
    "llama3": (
        "LlamaConfig",
        "LlamaForCausalLM",
        dict(
            tie_word_embeddings=False,
            rope_theta=500000.0,
            rope_scaling=LLAMA3_ROPE_SCALING,
        ),
    ),
    "mistral": ("MistralConfig", "MistralForCausalLM", dict(sliding_window=8, tie_word_embeddings=False)),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", dict(tie_word_embeddings=True, rope_theta=1000000.0)),
    "qwen3": ("Qwen3Config", "Qwen3ForCausalLM", dict(head_dim=16, tie_word_embeddings=True)),
    "gemma3": (
        "Gemma3TextConfig",
        "Gemma3ForCausalLM",
        dict(
            num_hidden_layers=6,
            head_dim=16,
            query_pre_attn_scalar=16,
            sliding_window=8,
            final_logit_softcapping=30.0,
            rms_norm_eps=1e-6,
        ),
    ),
    "phi3": ("Phi3Config", "Phi3ForCausalLM", dict(sliding_window=16, tie_word_embeddings=False)),
    # Phi-3's longrope (su) scaling: short factors and the attention factor of 2048 / 64 positions; the tests'
    # sequences stay under the 64 original positions (see docs/families.md for what happens past them).
    "phi3_longrope": (
        "Phi3Config",
        "Phi3ForCausalLM",
        dict(
            sliding_window=16,
            tie_word_embeddings=False,
            original_max_position_embeddings=64,
            rope_scaling={
                "rope_type": "longrope",
                "short_factor": [1.0 + 0.25 * i for i in range(8)],
                "long_factor": [1.0 + 2.0 * i for i in range(8)],
                "original_max_position_embeddings": 64,
            },
        ),
    ),
    "mixtral": (
        "MixtralConfig",
        "MixtralForCausalLM",
        dict(intermediate_size=64, num_local_experts=4, num_experts_per_tok=2, tie_word_embeddings=False),
    ),
    "qwen2_moe": (
        "Qwen2MoeConfig",
        "Qwen2MoeForCausalLM",
        dict(
            num_experts=4,
            num_experts_per_tok=2,
            moe_intermediate_size=32,
            shared_expert_intermediate_size=64,
            norm_topk_prob=False,
            tie_word_embeddings=False,
        ),
    ),
    "qwen3_moe": (
        "Qwen3MoeConfig",
        "Qwen3MoeForCausalLM",
        dict(
            head_dim=16, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32, norm_topk_prob=True
        ),
    ),
}


def write_family_checkpoint(family: str, path, **overrides) -> pathlib.Path:
    """A tiny random checkpoint of ``family`` (a FAMILY_CHECKPOINTS key) saved as an HF folder at ``path``."""
    import transformers

    config_class, model_class, fields = FAMILY_CHECKPOINTS[family]
    folder = pathlib.Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    config = getattr(transformers, config_class)(**{**_SHARED, **fields, **overrides})
    torch.manual_seed(0)
    model = getattr(transformers, model_class)(config).to(torch.float32)
    with torch.no_grad():  # transformers starts norms at 1 (Gemma's at 0) and biases at 0: nothing to test
        for param in model.parameters():
            if param.dim() == 1:
                param.add_(0.1 * torch.randn_like(param))
    model.save_pretrained(folder, safe_serialization=True)
    _write_tokenizer(folder, min(config.vocab_size, 320))
    if model_class == "Phi3ForCausalLM":
        # llama.cpp's Phi-3 converter wants a SentencePiece file unless the folder says GPT-2
        tokenizer_config = folder / "tokenizer_config.json"
        settings = json.loads(tokenizer_config.read_text())
        tokenizer_config.write_text(json.dumps({**settings, "tokenizer_class": "GPT2Tokenizer"}))
    return folder


def transformers_greedy(
    folder, prompts: list[list[int]], max_new_tokens: int, overrides: dict | None = None, adjust=None
):
    """transformers' greedy continuation of each prompt on the folder (config fields ``overrides`` changed, the
    loaded model passed to ``adjust`` first if given): the reference the family tests compare tokens with."""
    import transformers

    config = transformers.AutoConfig.from_pretrained(folder)
    for key, value in (overrides or {}).items():
        setattr(config, key, value)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, config=config, dtype=torch.float32)
    if adjust is not None:
        adjust(model)
    model.generation_config.eos_token_id = None
    out = []
    for prompt in prompts:
        ids = torch.tensor([prompt])
        with torch.inference_mode():
            tokens = model.generate(
                ids, attention_mask=torch.ones_like(ids), max_new_tokens=max_new_tokens, do_sample=False
            )
        out.append(tokens[0, len(prompt) :].tolist())
    return out
