"""Which layers attend through a sliding window, as a config.json or a GGUF states it.

transformers 5 writes ``layer_types`` ("sliding_attention" / "full_attention" per layer) for the families
that mix them; older configs leave it to the family's own rule (Gemma 3's every-sixth-layer-global pattern,
Qwen 2's ``max_window_layers``, Mistral's and Phi-3's window on every layer).
"""

from __future__ import annotations

from roles.model_files.model_path import ModelFileError


def every_layer(window, num_layers: int) -> tuple[int, ...]:
    """The same window on every layer; () when there is none (None or 0)."""
    return (int(window),) * num_layers if window else ()


def from_layer_types(config: dict, where: str) -> tuple[int, ...] | None:
    """The windows ``layer_types`` gives (None when the config has no layer_types)."""
    types = config.get("layer_types")
    if types is None:
        return None
    unknown = sorted(set(types) - {"sliding_attention", "full_attention"})
    if unknown:
        raise ModelFileError(
            f"{where}: layer_types holds {unknown}, which roleserve does not run "
            "(supported: sliding_attention, full_attention)"
        )
    if len(types) != int(config["num_hidden_layers"]):
        raise ModelFileError(
            f"{where}: layer_types lists {len(types)} layers; num_hidden_layers is {config['num_hidden_layers']}"
        )
    window = config.get("sliding_window")
    if "sliding_attention" in types and not window:
        raise ModelFileError(
            f"{where}: layer_types has sliding_attention layers but sliding_window is not set"
        )
    windows = tuple(int(window) if kind == "sliding_attention" else 0 for kind in types)
    return windows if any(windows) else ()


def from_pattern(window: int, num_layers: int, period: int) -> tuple[int, ...]:
    """llama.cpp's and Gemma's pattern: in every ``period`` layers the last one is global, the others local."""
    return tuple(0 if (layer + 1) % period == 0 else int(window) for layer in range(num_layers))
