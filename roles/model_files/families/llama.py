"""Llama 1, 2, 3.x (and the many checkpoints laid out as Llama): the decoder every other family varies.

Llama 3.x's rope scaling comes from config.json (``rope_scaling`` of type llama3) or, in a GGUF written by
llama.cpp's converter, as the per-frequency factors of the ``rope_freqs.weight`` tensor.
"""

from __future__ import annotations

from roles.model_files.families.attention_windows import every_layer
from roles.model_files.families.family import Family
from roles.model_files.model_path import ModelFileError


def _read_hf(config: dict, where: str) -> dict:
    if config.get("mlp_bias"):
        raise ModelFileError(f"{where}: mlp_bias true is not supported (its MLP linears have no biases here)")
    return {
        "attention_bias": bool(config.get("attention_bias", False)),
        "layer_windows": every_layer(config.get("sliding_window"), int(config["num_hidden_layers"])),
    }


def _read_gguf(checkpoint) -> dict:
    if "rope_freqs.weight" not in checkpoint.tensor_infos:
        return {}
    factors = [float(f) for f in checkpoint.vector("rope_freqs.weight")]
    return {"rope_scaling": {"rope_type": "frequency_factors", "factors": factors}}


FAMILY = Family(
    name="llama",
    hf_architectures=("LlamaForCausalLM",),
    hf_model_types=("llama",),
    gguf_architecture="llama",
    description="Llama 1, 2, 3.x (and Mistral as llama.cpp's converter writes it)",
    gguf_rope_permuted=True,
    read_hf=_read_hf,
    read_gguf=_read_gguf,
)
