"""Mixtral: Llama's decoder with a sparse mixture of SwiGLU experts in every layer (softmax over the router's
logits, top-k, renormalised). llama.cpp writes it as a ``llama`` GGUF with ``llama.expert_count`` and the
experts stacked in ``ffn_{gate,up,down}_exps``."""

from __future__ import annotations

from roles.model_files.families.attention_windows import every_layer
from roles.model_files.families.family import Family, MoeNames


def _read_hf(config: dict, where: str) -> dict:
    return {
        "num_experts": int(config["num_local_experts"]),
        "experts_per_token": int(config["num_experts_per_tok"]),
        "moe_intermediate_size": int(config["intermediate_size"]),
        "norm_topk_prob": True,
        "layer_windows": every_layer(config.get("sliding_window"), int(config["num_hidden_layers"])),
    }


def _read_gguf(checkpoint) -> dict:
    arch = checkpoint.architecture
    return {
        "num_experts": int(checkpoint.required(f"{arch}.expert_count")),
        "experts_per_token": int(checkpoint.required(f"{arch}.expert_used_count")),
        "moe_intermediate_size": int(checkpoint.required(f"{arch}.feed_forward_length")),
    }


FAMILY = Family(
    name="mixtral",
    hf_architectures=("MixtralForCausalLM",),
    hf_model_types=("mixtral",),
    gguf_architecture="llama",  # with llama.expert_count (families.registry tells it from llama)
    description="Mixtral (mixture of experts)",
    moe=MoeNames("block_sparse_moe.", "w1", "w3", "w2"),
    gguf_rope_permuted=True,
    read_hf=_read_hf,
    read_gguf=_read_gguf,
)
