"""Which decoder family a Hugging Face config.json describes, and the fields only that family has.

``llama`` is dense; ``mixtral`` and ``qwen2_moe`` are mixtures of experts whose every layer is sparse
(Qwen2-MoE's ``decoder_sparse_step`` / ``mlp_only_layers``, which make some layers dense, are refused).
"""

from __future__ import annotations

from roles.model_files.model_path import ModelFileError
from roles.model_files.model_shape import SUPPORTED_FAMILIES

_FAMILY_OF_ARCHITECTURE = {
    "LlamaForCausalLM": "llama",
    "MixtralForCausalLM": "mixtral",
    "Qwen2MoeForCausalLM": "qwen2_moe",
}


def hf_family(config: dict, where: str) -> str:
    """The family of ``config`` (by model_type, else by architectures), or an error naming the supported ones."""
    model_type = config.get("model_type")
    if model_type in SUPPORTED_FAMILIES:
        return model_type
    architectures = config.get("architectures") or []
    for architecture in architectures:
        if architecture in _FAMILY_OF_ARCHITECTURE:
            return _FAMILY_OF_ARCHITECTURE[architecture]
    raise ModelFileError(
        f"{where}: model_type {model_type!r} / architectures {architectures} are not supported "
        f"(supported: {', '.join(SUPPORTED_FAMILIES)})"
    )


def _refuse_dense_layers(config: dict, where: str) -> None:
    step = int(config.get("decoder_sparse_step") or 1)
    dense_layers = list(config.get("mlp_only_layers") or [])
    if step != 1 or dense_layers:
        raise ModelFileError(
            f"{where}: qwen2_moe with dense layers among the sparse ones (decoder_sparse_step {step}, "
            f"mlp_only_layers {dense_layers}) is not supported; every layer must be sparse "
            "(decoder_sparse_step 1, mlp_only_layers [])"
        )


def family_fields(family: str, config: dict, where: str) -> dict:
    """The ModelShape fields particular to ``family`` (none for llama)."""
    if family == "mixtral":
        return {
            "num_experts": int(config["num_local_experts"]),
            "experts_per_token": int(config["num_experts_per_tok"]),
            "moe_intermediate_size": int(config["intermediate_size"]),
            "norm_topk_prob": True,
        }
    if family == "qwen2_moe":
        _refuse_dense_layers(config, where)
        return {
            "attention_bias": bool(config.get("qkv_bias", True)),
            "num_experts": int(config["num_experts"]),
            "experts_per_token": int(config["num_experts_per_tok"]),
            "moe_intermediate_size": int(config["moe_intermediate_size"]),
            "norm_topk_prob": bool(config.get("norm_topk_prob", False)),
            "shared_expert_intermediate_size": int(config.get("shared_expert_intermediate_size") or 0),
        }
    return {}


def attention_window(config: dict) -> int | None:
    """The sliding attention window when the config turns one on (Mixtral's sliding_window, Qwen2's
    use_sliding_window), else None: the context is then capped to it, so attention never exceeds it."""
    window = config.get("sliding_window")
    if not window or config.get("use_sliding_window") is False:
        return None
    return int(window)
