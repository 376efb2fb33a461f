"""The family of a model file and each layer's attention window, as inspect shows them (headers only, no torch):
the launcher's `serve roles inspect` and a running scheduler state the same rows."""

from __future__ import annotations

from roles.model_files.families.registry import family_named
from roles.model_files.gguf_checkpoint import GGUFCheckpoint
from roles.model_files.hf_config import hf_shape, read_config
from roles.model_files.model_path import ModelFileError, is_gguf, resolve_model_path
from roles.model_files.model_shape import ModelShape


def _fact(key: str, value, source: str) -> dict:
    return {"key": key, "value": value, "source": source}


def attention_windows_text(shape: ModelShape) -> str:
    """Runs of layers with the same window: "0-4: 8, 5: full, ..." ("all N: full" without windows)."""
    windows = [shape.window_of(layer) for layer in range(shape.num_layers)]
    if not any(windows):
        return f"all {shape.num_layers}: full"
    runs: list[tuple[int, int, int]] = []  # (first layer, last layer, window)
    for layer, window in enumerate(windows):
        if runs and runs[-1][2] == window:
            runs[-1] = (runs[-1][0], layer, window)
        else:
            runs.append((layer, layer, window))
    return ", ".join(
        f"{first}{'' if first == last else f'-{last}'}: {window or 'full'}" for first, last, window in runs
    )


def family_facts(model_path: str) -> list[dict]:
    """[{"key", "value", "source"}]: the family and the attention window of each layer."""
    try:
        resolved = resolve_model_path(model_path)
        if is_gguf(resolved):
            checkpoint = GGUFCheckpoint(resolved)
            shape = checkpoint.shape()
            source = f"{resolved}: general.architecture {checkpoint.architecture!r}"
        else:
            config = read_config(resolved)
            shape = hf_shape(resolved, config)
            source = f"{resolved / 'config.json'}: architectures {config.get('architectures')}"
    except ModelFileError as error:
        return [_fact("family", None, f"unreadable: {error}")]
    family = family_named(shape.architecture)
    return [
        _fact("family", f"{family.name} ({family.description})", source),
        _fact("attention_windows", attention_windows_text(shape), "per layer, from the same file"),
    ]
