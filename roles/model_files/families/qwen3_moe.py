"""Qwen3-MoE: Qwen 3's attention (per-head Q/K RMSNorm, no biases) with a mixture of SwiGLU experts in every
layer, their weights renormalised with ``norm_topk_prob`` (llama.cpp always renormalises), no shared expert."""

from __future__ import annotations

from roles.model_files.families.family import Family, MoeNames
from roles.model_files.families.qwen_moe_layers import experts_from_gguf, experts_from_hf


def _read_hf(config: dict, where: str) -> dict:
    return {**experts_from_hf(config, where), "attention_bias": bool(config.get("attention_bias", False))}


FAMILY = Family(
    name="qwen3_moe",
    hf_architectures=("Qwen3MoeForCausalLM",),
    hf_model_types=("qwen3_moe",),
    gguf_architecture="qwen3moe",
    description="Qwen3-MoE (experts, per-head Q/K RMSNorm)",
    qk_norm=True,
    moe=MoeNames("mlp.", "gate_proj", "up_proj", "down_proj"),
    read_hf=_read_hf,
    read_gguf=lambda checkpoint: {**experts_from_gguf(checkpoint), "norm_topk_prob": True},
)
