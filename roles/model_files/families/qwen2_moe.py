"""Qwen2-MoE (Qwen1.5-MoE): every layer a mixture of SwiGLU experts (renormalised only with
``norm_topk_prob``) plus a shared expert gated by sigmoid(gate(x)), and Q/K/V biases."""

from __future__ import annotations

from roles.model_files.families.family import Family, MoeNames
from roles.model_files.families.qwen_moe_layers import experts_from_gguf, experts_from_hf


def _read_hf(config: dict, where: str) -> dict:
    return {
        **experts_from_hf(config, where),
        "attention_bias": bool(config.get("qkv_bias", True)),
        "shared_expert_intermediate_size": int(config.get("shared_expert_intermediate_size") or 0),
    }


def _read_gguf(checkpoint) -> dict:
    arch = checkpoint.architecture
    return {
        **experts_from_gguf(checkpoint),
        "norm_topk_prob": False,  # llama.cpp's qwen2moe never renormalises
        "shared_expert_intermediate_size": int(
            checkpoint.field(f"{arch}.expert_shared_feed_forward_length", 0)
        ),
    }


FAMILY = Family(
    name="qwen2_moe",
    hf_architectures=("Qwen2MoeForCausalLM",),
    hf_model_types=("qwen2_moe",),
    gguf_architecture="qwen2moe",
    description="Qwen2-MoE (experts and a gated shared expert, Q/K/V biases)",
    moe=MoeNames("mlp.", "gate_proj", "up_proj", "down_proj"),
    read_hf=_read_hf,
    read_gguf=_read_gguf,
)
