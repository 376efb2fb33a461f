"""Open whichever checkpoint a model path names: a GGUF file or a Hugging Face folder.

Opening an HF folder imports torch (safetensors); a GGUF does not, so a scheduler serving one in the kernels
alone never loads torch."""

from __future__ import annotations

from typing import TYPE_CHECKING

from roles.model_files.gguf_checkpoint import GGUFCheckpoint
from roles.model_files.model_path import is_gguf, resolve_model_path

if TYPE_CHECKING:
    from roles.model_files.hf_checkpoint import HFCheckpoint


def open_checkpoint(path: str) -> GGUFCheckpoint | HFCheckpoint:
    """Resolve ``path`` (alias, .gguf or HF folder) and open it once: shape, tensors and eos ids all come from it."""
    resolved = resolve_model_path(path)
    if is_gguf(resolved):
        return GGUFCheckpoint(resolved)
    from roles.model_files import hf_checkpoint

    return hf_checkpoint.HFCheckpoint(resolved)
