"""Checks the model file's tensors before anything starts (headers only, as the derivations read them):
every tensor the model needs is present, of a type roleserve runs, with the dims its metadata implies."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from launcher.derivations import read_model_shape
from roles.model_files.model_path import ModelFileError, is_gguf, resolve_model_path
from roles.model_files.tensor_check import model_file_problems, summary
from runtime_context.constraints import Constraint
from runtime_context.derivation import DerivationFailed


@lru_cache(maxsize=8)
def _problems(path: str) -> tuple[str, ...]:
    return tuple(model_file_problems(path))


def model_file_problem(values: Mapping[str, Any]) -> str | None:
    """A path that does not resolve, or a GGUF whose header cannot be read, is left to the derivation (or the
    loader) that reads it, so it is reported once."""
    path = values["model.path"]
    try:
        if is_gguf(resolve_model_path(path)):
            read_model_shape(path)
    except (ModelFileError, DerivationFailed):
        return None
    problems = _problems(path)
    return summary(list(problems)) if problems else None


MODEL_FILE_SERVABLE = Constraint(
    ("model.path",),
    lambda values: model_file_problem(values) is None,
    lambda values: f"cannot be served: {model_file_problem(values)}",
)
