"""Checks speculative_method draft_model's draft before anything starts: a path that resolves to a model
roleserve serves, whose tokenizer has the served model's tokens id for id (a drafted id must mean the same
text to both). Each problem names the draft's file and what differs; `serve` then exits 2."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from roles.model_files.hf_tokenizer import folder_tokenizer
from roles.model_files.model_path import ModelFileError, is_gguf, resolve_model_path
from roles.model_files.tensor_check import model_file_problems, summary
from roles.model_files.tokenizer_metadata import read_tokenizer_metadata
from runtime_context.constraints import Constraint


def model_tokens(path: str) -> list[str | None]:
    """The text of every token id of the model at ``path`` (a GGUF's tokenizer.ggml.tokens, a folder's
    tokenizer.json with its added tokens); None for an id the folder's tokenizer leaves unused."""
    resolved = resolve_model_path(path)
    if is_gguf(resolved):
        return list(read_tokenizer_metadata(resolved).tokens)
    vocabulary = folder_tokenizer(resolved).get_vocab(with_added_tokens=True)
    tokens: list[str | None] = [None] * (max(vocabulary.values(), default=-1) + 1)
    for text, index in vocabulary.items():
        tokens[index] = text
    return tokens


@lru_cache(maxsize=8)
def draft_problem(model_path: str, draft_path: str) -> str | None:
    try:
        resolved = resolve_model_path(draft_path)
    except ModelFileError as error:
        return str(error)
    problems = model_file_problems(str(resolved))
    if problems:
        return summary(problems)
    try:
        ours = model_tokens(model_path)
    except ModelFileError:
        return None  # the served model's own checks report it
    try:
        theirs = model_tokens(draft_path)
    except ModelFileError as error:
        return str(error)
    if ours == theirs:
        return None
    shared = min(len(ours), len(theirs))
    differing = next((i for i in range(shared) if ours[i] != theirs[i]), shared)
    return (
        f"{resolved}: its tokenizer is not the served model's: {len(theirs)} tokens against {len(ours)}, "
        f"the first different at id {differing}"
    )


def _problem(values: Mapping[str, Any]) -> str | None:
    if values["exec.speculative_method"] != "draft_model" or not values["exec.speculative_draft_model"]:
        return None
    return draft_problem(values["model.path"], values["exec.speculative_draft_model"])


DRAFT_MODEL_USABLE = Constraint(
    ("exec.speculative_draft_model", "exec.speculative_method", "model.path"),
    lambda values: _problem(values) is None,
    lambda values: f"cannot draft for model.path: {_problem(values)}",
)
