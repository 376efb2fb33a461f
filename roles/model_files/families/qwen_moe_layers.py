"""What Qwen's mixtures (Qwen2-MoE, Qwen3-MoE) share: every layer sparse, read the same way."""

from __future__ import annotations

from roles.model_files.model_path import ModelFileError


def refuse_dense_layers(config: dict, where: str) -> None:
    """Layers made dense by ``decoder_sparse_step`` / ``mlp_only_layers`` are refused: every layer is sparse here."""
    step = int(config.get("decoder_sparse_step") or 1)
    dense_layers = list(config.get("mlp_only_layers") or [])
    if step != 1 or dense_layers:
        raise ModelFileError(
            f"{where}: dense layers among the sparse ones (decoder_sparse_step {step}, mlp_only_layers "
            f"{dense_layers}) are not supported; every layer must be sparse (decoder_sparse_step 1, "
            "mlp_only_layers [])"
        )


def experts_from_hf(config: dict, where: str) -> dict:
    refuse_dense_layers(config, where)
    return {
        # released configs say num_experts; transformers 5 saves Qwen3-MoE's as num_local_experts
        "num_experts": int(config["num_experts"] if "num_experts" in config else config["num_local_experts"]),
        "experts_per_token": int(config["num_experts_per_tok"]),
        "moe_intermediate_size": int(config["moe_intermediate_size"]),
        "norm_topk_prob": bool(config.get("norm_topk_prob", False)),
    }


def experts_from_gguf(checkpoint) -> dict:
    arch = checkpoint.architecture
    return {
        "num_experts": int(checkpoint.required(f"{arch}.expert_count")),
        "experts_per_token": int(checkpoint.required(f"{arch}.expert_used_count")),
        "moe_intermediate_size": int(checkpoint.required(f"{arch}.expert_feed_forward_length")),
    }
