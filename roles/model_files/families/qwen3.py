"""Qwen 3 (dense): Llama's decoder with an RMSNorm over each head of Q and K, and no biases."""

from __future__ import annotations

from roles.model_files.families.family import Family
from roles.model_files.families.qwen2 import qwen_windows


def _read_hf(config: dict, where: str) -> dict:
    return {
        "attention_bias": bool(config.get("attention_bias", False)),
        "layer_windows": qwen_windows(config, where),
    }


FAMILY = Family(
    name="qwen3",
    hf_architectures=("Qwen3ForCausalLM",),
    hf_model_types=("qwen3",),
    gguf_architecture="qwen3",
    description="Qwen 3 dense (per-head Q/K RMSNorm)",
    qk_norm=True,
    read_hf=_read_hf,
)
