"""Open whichever checkpoint a model path names: a GGUF file or a Hugging Face folder.

Not imported by the tokenizer: opening an HF folder imports torch (safetensors)."""

from __future__ import annotations

from roles.model_files.gguf_checkpoint import GGUFCheckpoint
from roles.model_files.hf_checkpoint import HFCheckpoint
from roles.model_files.model_path import is_gguf, resolve_model_path


def open_checkpoint(path: str) -> GGUFCheckpoint | HFCheckpoint:
    """Resolve ``path`` (alias, .gguf or HF folder) and open it once: shape, tensors and eos ids all come from it."""
    resolved = resolve_model_path(path)
    return GGUFCheckpoint(resolved) if is_gguf(resolved) else HFCheckpoint(resolved)
