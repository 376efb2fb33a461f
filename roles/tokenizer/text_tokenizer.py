"""Text <-> token ids for a checkpoint, built with the ``tokenizers`` library from GGUF metadata or tokenizer.json."""

from __future__ import annotations

import json
import pathlib

from tokenizers import Tokenizer

from roles.model_files.gguf_checkpoint import GGUFCheckpoint
from roles.model_files.gguf_tokenizer import token_text, tokenizer_from_gguf
from roles.model_files.model_path import ModelFileError, is_gguf, resolve_model_path
from roles.model_files.tokenizer_file import folder_tokenizer
from roles.tokenizer.chat_template import render_chat_template


def _token_text(value) -> str | None:
    """tokenizer_config.json writes special tokens either as strings or as AddedToken dicts."""
    if isinstance(value, dict):
        return value.get("content")
    return value


def _read_json(path: pathlib.Path) -> dict:
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text())
    except ValueError as error:
        raise ModelFileError(f"{path} is not valid JSON: {error}") from error


def _hf_chat_template(folder: pathlib.Path, config: dict) -> str | None:
    jinja_file = folder / "chat_template.jinja"
    if jinja_file.is_file():
        return jinja_file.read_text()
    template = config.get("chat_template")
    if isinstance(template, list):  # named templates: use "default"
        named = {entry.get("name"): entry.get("template") for entry in template}
        return named.get("default") or next(iter(named.values()), None)
    return template


class TextTokenizer:
    """encode / decode / chat template for one checkpoint."""

    def __init__(
        self,
        tokenizer: Tokenizer,
        bos_token: str | None,
        eos_token: str | None,
        eos_token_ids: frozenset[int],
        chat_template: str | None,
    ):
        self.tokenizer = tokenizer
        self.bos_token = bos_token
        self.eos_token = eos_token
        self.bos_token_id = None if bos_token is None else tokenizer.token_to_id(bos_token)
        self.eos_token_ids = eos_token_ids
        self.chat_template = chat_template
        self.vocab_size = tokenizer.get_vocab_size(with_added_tokens=True)

    @classmethod
    def from_gguf(cls, path: str | pathlib.Path) -> TextTokenizer:
        meta = GGUFCheckpoint(path).tokenizer_metadata()
        tokenizer = tokenizer_from_gguf(meta, pathlib.Path(path))

        eos_ids = frozenset(i for i in (meta.eos_token_id,) if i is not None)
        return cls(
            tokenizer,
            token_text(meta, meta.bos_token_id),
            token_text(meta, meta.eos_token_id),
            eos_ids,
            meta.chat_template,
        )

    @classmethod
    def from_hf_folder(cls, folder: str | pathlib.Path) -> TextTokenizer:
        folder = pathlib.Path(folder)
        tokenizer = folder_tokenizer(folder)
        config = _read_json(folder / "tokenizer_config.json")
        bos, eos = _token_text(config.get("bos_token")), _token_text(config.get("eos_token"))
        eos_ids = set()
        for source in (_read_json(folder / "generation_config.json"), _read_json(folder / "config.json")):
            value = source.get("eos_token_id")
            if value is not None:
                eos_ids.update(value if isinstance(value, list) else [value])
                break
        if eos is not None and tokenizer.token_to_id(eos) is not None:
            eos_ids.add(tokenizer.token_to_id(eos))
        return cls(tokenizer, bos, eos, frozenset(int(i) for i in eos_ids), _hf_chat_template(folder, config))

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=add_special_tokens).ids

    def decode(self, ids: list[int], skip_special_tokens: bool = True) -> str:
        return self.tokenizer.decode(list(ids), skip_special_tokens=skip_special_tokens)

    def apply_chat_template(self, messages: list[dict], add_generation_prompt: bool = True, **extra) -> str:
        return render_chat_template(
            self.chat_template,
            messages,
            add_generation_prompt=add_generation_prompt,
            bos_token=self.bos_token,
            eos_token=self.eos_token,
            **extra,
        )


def load_text_tokenizer(path: str | pathlib.Path) -> TextTokenizer:
    """The tokenizer of a model path (alias, .gguf file or HF folder)."""
    resolved = resolve_model_path(str(path))
    if is_gguf(resolved):
        return TextTokenizer.from_gguf(resolved)
    return TextTokenizer.from_hf_folder(resolved)
