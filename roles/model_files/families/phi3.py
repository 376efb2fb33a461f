"""Phi-3 and Phi-3.5 mini: Llama's decoder with Q|K|V in one weight and gate|up in another, a sliding window
on every layer where the config sets one, and su/longrope scaling (``long_factor`` / ``short_factor``) where
set.

Longrope: positions before ``original_max_position_embeddings`` rotate with the short factors, later ones with
the long factors, and cos/sin are scaled by sqrt(1 + ln(max / original) / ln(original)), as transformers
computes them for a sequence as it grows. llama.cpp's converter writes the factors as the
``rope_factors_short`` / ``rope_factors_long`` tensors.
"""

from __future__ import annotations

import math

from roles.model_files.families.attention_windows import every_layer
from roles.model_files.families.family import Family
from roles.model_files.model_path import ModelFileError


def _attention_factor(context: int, original: int) -> float:
    scale = context / original
    return math.sqrt(1 + math.log(scale) / math.log(original)) if scale > 1.0 else 1.0


def _longrope(short, long, context: int, original: int, attention_factor=None) -> dict:
    return {
        "rope_type": "longrope",
        "short_factor": [float(f) for f in short],
        "long_factor": [float(f) for f in long],
        "original_max_position_embeddings": int(original),
        "attention_factor": float(attention_factor or _attention_factor(context, original)),
    }


def _read_hf(config: dict, where: str) -> dict:
    parameters = config.get("rope_parameters") or config.get("rope_scaling") or {}
    partial = float(parameters.get("partial_rotary_factor", config.get("partial_rotary_factor", 1.0)))
    if partial != 1.0:
        raise ModelFileError(f"{where}: partial_rotary_factor {partial} is not supported (supported: 1.0)")
    fields = {"layer_windows": every_layer(config.get("sliding_window"), int(config["num_hidden_layers"]))}
    kind = parameters.get("rope_type", parameters.get("type"))
    if kind in ("su", "longrope"):
        context = int(config["max_position_embeddings"])
        original = int(
            parameters.get("original_max_position_embeddings") or config["original_max_position_embeddings"]
        )
        fields["rope_scaling"] = _longrope(
            parameters["short_factor"],
            parameters["long_factor"],
            context,
            original,
            parameters.get("attention_factor"),
        )
    return fields


def _read_gguf(checkpoint) -> dict:
    arch = checkpoint.architecture
    layers = int(checkpoint.required(f"{arch}.block_count"))
    fields = {"layer_windows": every_layer(checkpoint.field(f"{arch}.attention.sliding_window", 0), layers)}
    if "rope_factors_long.weight" in checkpoint.tensor_infos:
        context = int(checkpoint.required(f"{arch}.context_length"))
        original = int(checkpoint.required(f"{arch}.rope.scaling.original_context_length"))
        fields["rope_scaling"] = _longrope(
            checkpoint.vector("rope_factors_short.weight"),
            checkpoint.vector("rope_factors_long.weight"),
            context,
            original,
            checkpoint.field(f"{arch}.rope.scaling.attn_factor"),
        )
    return fields


FAMILY = Family(
    name="phi3",
    hf_architectures=("Phi3ForCausalLM",),
    hf_model_types=("phi3",),
    gguf_architecture="phi3",
    description="Phi-3, Phi-3.5 mini (fused Q|K|V and gate|up, longrope)",
    fused_qkv=True,
    hf_layer_names={"qkv": "self_attn.qkv_proj", "gate_up": "mlp.gate_up_proj"},
    gguf_layer_names={"attn_qkv": "self_attn.qkv_proj", "ffn_up": "mlp.gate_up_proj"},
    read_hf=_read_hf,
    read_gguf=_read_gguf,
)
