"""Gemma 3 (text): local sliding-window layers interleaved with global ones, and Gemma's own details.

- every ``sliding_window_pattern``-th layer (6) is global, the others see ``sliding_window`` positions; the local
  layers rotate with their own base (``rope_local_base_freq``, 10000), the global ones with ``rope_theta`` and
  its scaling;
- RMSNorm multiplies by (1 + w): the checkpoint's w is shifted once at conversion (llama.cpp's converter has
  already shifted a GGUF's), so the decoder's norms are plain;
- per-head Q/K norms, norms on the attention's and the feed-forward's outputs too, a GELU-tanh gated MLP,
  embeddings scaled by sqrt(hidden size), the output tied to them, scores scaled by
  ``query_pre_attn_scalar`` ** -0.5, and ``final_logit_softcapping`` where set.
"""

from __future__ import annotations

import math

from roles.model_files.families.attention_windows import from_layer_types, from_pattern
from roles.model_files.families.family import Family
from roles.model_files.model_path import ModelFileError

_PERIOD = 6  # llama.cpp's default pattern when a GGUF names none, and transformers' default
_LOCAL_BASE = 10000.0  # llama.cpp's default rope base of the local layers, and transformers'


def _read_hf(config: dict, where: str) -> dict:
    if config.get("attn_logit_softcapping") is not None:
        raise ModelFileError(
            f"{where}: attn_logit_softcapping is set; Gemma 3 has none (Gemma 2 is not supported)"
        )
    activation = config.get("hidden_activation") or config.get("hidden_act")
    if activation not in (None, "gelu_pytorch_tanh"):
        raise ModelFileError(
            f"{where}: hidden_activation {activation!r} is not supported (supported: gelu_pytorch_tanh)"
        )
    layers = int(config["num_hidden_layers"])
    window = config.get("sliding_window")
    windows = from_layer_types(config, where)
    if windows is None:
        period = int(config.get("sliding_window_pattern") or config.get("_sliding_window_pattern") or _PERIOD)
        windows = from_pattern(window, layers, period) if window else ()
    parameters = config.get("rope_parameters") or {}
    local = parameters.get("sliding_attention", {}).get("rope_theta", config.get("rope_local_base_freq"))
    scalar = config.get("query_pre_attn_scalar") or config.get("head_dim") or 256
    return {
        "layer_windows": windows,
        "rope_theta_local": float(local if local is not None else _LOCAL_BASE),
        "attention_scale": float(scalar) ** -0.5,
        "final_logit_softcap": float(config.get("final_logit_softcapping") or 0.0),
        "tie_word_embeddings": True,
    }


def _read_gguf(checkpoint) -> dict:
    arch = checkpoint.architecture
    layers = int(checkpoint.required(f"{arch}.block_count"))
    window = int(checkpoint.field(f"{arch}.attention.sliding_window", 0) or 0)
    windows: tuple[int, ...] = ()
    if window > 0:
        pattern = checkpoint.field(f"{arch}.attention.sliding_window_pattern", _PERIOD)
        if isinstance(pattern, (list, tuple)) or hasattr(pattern, "__len__"):
            windows = tuple(window if bool(is_local) else 0 for is_local in pattern)
        else:
            windows = from_pattern(window, layers, int(pattern))
    hidden = int(checkpoint.required(f"{arch}.embedding_length"))
    heads = int(checkpoint.required(f"{arch}.attention.head_count"))
    head_dim = int(checkpoint.field(f"{arch}.attention.key_length", hidden // heads))
    # llama.cpp's rule: Gemma 3 27B (62 layers) scales by hidden / heads, the others by the head size.
    scale = 1.0 / math.sqrt(hidden / heads if layers == 62 else head_dim)
    return {
        "layer_windows": windows,
        "rope_theta_local": float(checkpoint.field(f"{arch}.rope.freq_base_swa", _LOCAL_BASE)),
        "attention_scale": scale,
        "final_logit_softcap": float(checkpoint.field(f"{arch}.final_logit_softcapping", 0.0) or 0.0),
    }


FAMILY = Family(
    name="gemma3",
    hf_architectures=("Gemma3ForCausalLM",),
    hf_model_types=("gemma3_text",),
    gguf_architecture="gemma3",
    description="Gemma 3 text (local/global layers, (1 + w) norms, GELU-tanh, scaled embeddings)",
    qk_norm=True,
    sandwich_norms=True,
    norm_offset=1.0,
    activation="gelu_tanh",
    scale_embeddings=True,
    hf_layer_names={
        "ffn_norm": "pre_feedforward_layernorm",
        "attn_output_norm": "post_attention_layernorm",
        "ffn_output_norm": "post_feedforward_layernorm",
    },
    gguf_layer_names={
        "ffn_norm": "pre_feedforward_layernorm",
        "post_attention_norm": "post_attention_layernorm",
        "post_ffw_norm": "post_feedforward_layernorm",
    },
    read_hf=_read_hf,
    read_gguf=_read_gguf,
)
