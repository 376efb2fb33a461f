"""Write tiny random mixture-of-experts checkpoints (Mixtral, Qwen2-MoE) in Hugging Face folder layout.

Like ``tests/tiny_checkpoint.write_tiny_llama``: config.json, model.safetensors via transformers'
save_pretrained (seeded), and the same tiny byte-level BPE tokenizer, so a folder serves end to end too.
"""

from __future__ import annotations

import pathlib

import torch

from tests.tiny_checkpoint import _write_tokenizer

_SHARED = dict(
    vocab_size=320,
    hidden_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=2048,
    rms_norm_eps=1e-5,
    tie_word_embeddings=False,
    num_experts_per_tok=2,
    # Wider than HF's 0.02 so logits (and router scores) are spread out: no near-ties decided by rounding.
    initializer_range=0.2,
    bos_token_id=0,
    eos_token_id=2,
    pad_token_id=0,
)
_MIXTRAL = dict(_SHARED, intermediate_size=64, num_local_experts=4, rope_theta=10000.0)
_QWEN2_MOE = dict(
    _SHARED,
    intermediate_size=96,
    moe_intermediate_size=32,
    shared_expert_intermediate_size=64,
    num_experts=4,
    norm_topk_prob=False,
)


def _write(folder, config, model_class, seed: int) -> pathlib.Path:
    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    model = model_class(config).to(torch.float32)
    model.save_pretrained(folder, safe_serialization=True)
    _write_tokenizer(folder, min(config.vocab_size, 320))
    return folder


def write_tiny_mixtral(path, **overrides) -> pathlib.Path:
    """A tiny random MixtralForCausalLM (4 experts, top 2) at ``path``; ``overrides`` replace MixtralConfig
    fields, ``seed`` (default 0) fixes the weights."""
    import transformers

    seed = overrides.pop("seed", 0)
    config = transformers.MixtralConfig(**{**_MIXTRAL, **overrides})
    return _write(path, config, transformers.MixtralForCausalLM, seed)


def write_tiny_qwen2_moe(path, **overrides) -> pathlib.Path:
    """A tiny random Qwen2MoeForCausalLM (4 experts, top 2, a shared expert, Q/K/V biases) at ``path``;
    ``overrides`` replace Qwen2MoeConfig fields, ``seed`` (default 0) fixes the weights."""
    import transformers

    seed = overrides.pop("seed", 0)
    config = transformers.Qwen2MoeConfig(**{**_QWEN2_MOE, **overrides})
    return _write(path, config, transformers.Qwen2MoeForCausalLM, seed)
