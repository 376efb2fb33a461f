"""Which token ids end a generation for a loaded model.

Preferred source: ``model.eos_token_ids`` (or ``model.eos_token_id``), which ``load_model`` and the weight
cache set from the checkpoint they opened. Otherwise the checkpoint's own metadata (``eos_token_ids`` of
``roles.model_files``' GGUF and HF checkpoints).
"""

from __future__ import annotations


def eos_token_ids(model, model_path: str | None) -> frozenset[int]:
    ids = getattr(model, "eos_token_ids", None)
    if ids is None and getattr(model, "eos_token_id", None) is not None:
        ids = [model.eos_token_id]
    if ids is None and model_path is not None:
        from roles.model_files.checkpoint import open_checkpoint

        ids = open_checkpoint(model_path).eos_token_ids()
    return frozenset(int(i) for i in ids or [])
