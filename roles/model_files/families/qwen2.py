"""Qwen 2 and 2.5: Llama's decoder with biases on the Q, K and V projections.

A sliding window applies only with ``use_sliding_window`` (no released checkpoint sets it), to the layers from
``max_window_layers`` on, as transformers reads it.
"""

from __future__ import annotations

from roles.model_files.families.attention_windows import from_layer_types
from roles.model_files.families.family import Family


def qwen_windows(config: dict, where: str) -> tuple[int, ...]:
    if not config.get("use_sliding_window") or not config.get("sliding_window"):
        return ()
    windows = from_layer_types(config, where)
    if windows is not None:
        return windows
    first = int(config.get("max_window_layers", 0))
    window = int(config["sliding_window"])
    return tuple(window if layer >= first else 0 for layer in range(int(config["num_hidden_layers"])))


def _read_hf(config: dict, where: str) -> dict:
    return {"attention_bias": True, "layer_windows": qwen_windows(config, where)}


FAMILY = Family(
    name="qwen2",
    hf_architectures=("Qwen2ForCausalLM",),
    hf_model_types=("qwen2",),
    gguf_architecture="qwen2",
    description="Qwen 2, Qwen 2.5 (Q/K/V biases)",
    read_hf=_read_hf,
)
