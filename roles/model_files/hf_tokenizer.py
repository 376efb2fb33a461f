"""A Hugging Face folder's tokenizer: its tokenizer.json, with tokenizer_config.json applied as transformers'
fast tokenizer (``PreTrainedTokenizerFast``) applies it.

tokenizer.json holds the whole pipeline, BOS/EOS included (its post-processor): transformers 5 ignores
tokenizer_config.json's ``add_bos_token`` / ``add_eos_token`` when there is a tokenizer.json, and so do we.
tokenizer_config.json adds to it: named special tokens the vocabulary lacks become special added tokens,
and ``split_special_tokens`` makes special tokens in a text plain text.
"""

from __future__ import annotations

import json
import pathlib

from tokenizers import AddedToken, Tokenizer

from roles.model_files.model_path import ModelFileError

# The named special tokens of transformers (its special_tokens_map), as tokenizer_config.json names them.
SPECIAL_TOKEN_NAMES = (
    "bos_token",
    "eos_token",
    "unk_token",
    "sep_token",
    "pad_token",
    "cls_token",
    "mask_token",
)
_EXTRA_SPECIAL_TOKENS = ("additional_special_tokens", "extra_special_tokens")


def read_json(path: pathlib.Path) -> dict:
    """A JSON object file, or {} when the file does not exist."""
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError as error:
        raise ModelFileError(f"{path} is not valid JSON: {error}") from error


def _token_text(value) -> str | None:
    """tokenizer_config.json writes special tokens either as strings or as AddedToken dicts."""
    return value.get("content") if isinstance(value, dict) else value


def special_tokens(config: dict) -> dict[str, str]:
    """bos_token, eos_token, ... -> text, for those tokenizer_config.json names."""
    named = {name: _token_text(config.get(name)) for name in SPECIAL_TOKEN_NAMES}
    return {name: text for name, text in named.items() if isinstance(text, str)}


def _extra_special_tokens(config: dict) -> list[str]:
    found = []
    for key in _EXTRA_SPECIAL_TOKENS:
        value = config.get(key) or []
        found += [_token_text(token) for token in (value.values() if isinstance(value, dict) else value)]
    return [text for text in found if isinstance(text, str)]


def folder_tokenizer(folder: pathlib.Path, config: dict | None = None) -> Tokenizer:
    """The folder's tokenizer.json with its tokenizer_config.json (read when ``config`` is None) applied."""
    path = folder / "tokenizer.json"
    try:
        tokenizer = Tokenizer.from_file(str(path))
    except Exception as error:
        raise ModelFileError(f"{path} is not a loadable tokenizer: {error}") from error
    config = read_json(folder / "tokenizer_config.json") if config is None else config
    named = special_tokens(config)
    added = {token.content for token in tokenizer.get_added_tokens_decoder().values()}
    missing = [text for text in [*named.values(), *_extra_special_tokens(config)] if text not in added]
    if missing:
        tokenizer.add_tokens([AddedToken(text, special=True) for text in dict.fromkeys(missing)])
    tokenizer.encode_special_tokens = bool(config.get("split_special_tokens", False))
    return tokenizer
