"""The speculator exec.speculative_method names: none, n-grams (speculator.NgramSpeculator) or a draft
model (draft_model.DraftModelSpeculator)."""

from __future__ import annotations

from roles.model_files.model_shape import ModelShape
from roles.scheduler.speculative.speculator import NgramSpeculator, Speculator


def build_speculator(config, shape: ModelShape) -> Speculator | None:
    """The speculator an EngineConfig's speculative_method names (None for none); a draft model is loaded
    here."""
    method = config.speculative_method
    if method == "none":
        return None
    if method == "ngram":
        return NgramSpeculator(
            config.speculative_num_draft_tokens, config.speculative_ngram_min, config.speculative_ngram_max
        )
    if method == "draft_model":
        from roles.scheduler.speculative.draft_model import DraftModelSpeculator

        return DraftModelSpeculator(config, shape)
    raise ValueError(f"speculative_method must be none, ngram or draft_model; got {method!r}")
