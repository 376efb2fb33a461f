"""Text <-> token ids and the chat template of the served model, from GGUF metadata or a folder's tokenizer.json."""

from __future__ import annotations

import pathlib

from tokenizers import Tokenizer

from roles.model_files.gguf_tokenizer import tokenizer_from_gguf, verbatim_tokens
from roles.model_files.hf_tokenizer import folder_tokenizer, read_json, special_tokens
from roles.model_files.model_path import is_gguf, resolve_model_path
from roles.model_files.tokenizer_metadata import read_tokenizer_metadata
from roles.tokenizer.chat_template import render_chat_template
from roles.tokenizer.chat_template_source import (
    ChatTemplates,
    folder_templates,
    gguf_templates,
    templates_from_setting,
)


class TextTokenizer:
    """encode / decode / chat template for one checkpoint."""

    def __init__(
        self,
        tokenizer: Tokenizer,
        special_tokens: dict[str, str],
        eos_token_ids: frozenset[int],
        templates: ChatTemplates,
        verbatim: dict[int, str] | None = None,
    ):
        self.tokenizer = tokenizer
        self.verbatim = verbatim or {}  # token id -> text shown as written, not through the decoder
        self.special_tokens = special_tokens  # bos_token, eos_token, ... -> text, as templates see them
        self.bos_token = special_tokens.get("bos_token")
        self.eos_token = special_tokens.get("eos_token")
        self.bos_token_id = None if self.bos_token is None else tokenizer.token_to_id(self.bos_token)
        self.eos_token_ids = eos_token_ids  # every token that ends a turn
        self.templates = templates
        self.vocab_size = tokenizer.get_vocab_size(with_added_tokens=True)

    @property
    def chat_template(self) -> str | None:
        return self.templates.default

    @classmethod
    def from_gguf(cls, path: str | pathlib.Path, templates: ChatTemplates | None = None) -> TextTokenizer:
        path = pathlib.Path(path)
        meta = read_tokenizer_metadata(path)
        ids = {
            "bos_token": meta.bos_token_id,
            "eos_token": meta.eos_token_id,
            "unk_token": meta.unknown_token_id,
            "pad_token": meta.pad_token_id,
        }
        special = {name: meta.token_text(i) for name, i in ids.items() if meta.token_text(i) is not None}
        tokenizer = tokenizer_from_gguf(meta, path)
        return cls(
            tokenizer,
            special,
            meta.end_of_generation_ids(),
            templates or gguf_templates(meta.chat_template, meta.named_chat_templates, path),
            verbatim_tokens(meta, tokenizer),
        )

    @classmethod
    def from_hf_folder(
        cls, folder: str | pathlib.Path, templates: ChatTemplates | None = None
    ) -> TextTokenizer:
        folder = pathlib.Path(folder)
        config = read_json(folder / "tokenizer_config.json")
        tokenizer = folder_tokenizer(folder, config)
        special = special_tokens(config)
        eos_ids = set()
        for source in (read_json(folder / "generation_config.json"), read_json(folder / "config.json")):
            value = source.get("eos_token_id")
            if value is not None:
                eos_ids.update(value if isinstance(value, list) else [value])
                break
        eos = special.get("eos_token")
        if eos is not None and tokenizer.token_to_id(eos) is not None:
            eos_ids.add(tokenizer.token_to_id(eos))
        return cls(
            tokenizer,
            special,
            frozenset(int(i) for i in eos_ids),
            templates or folder_templates(folder, config),
        )

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        # encode_batch_fast skips the character offsets nobody here reads: a third of the time on long prompts.
        return self.tokenizer.encode_batch_fast([text], add_special_tokens=add_special_tokens)[0].ids

    def decode(self, ids: list[int], skip_special_tokens: bool = True) -> str:
        ids = list(ids)
        if not self.verbatim or self.verbatim.keys().isdisjoint(ids):
            return self.tokenizer.decode(ids, skip_special_tokens=skip_special_tokens)
        pieces, run = [], []
        for token_id in [*ids, None]:  # runs of ordinary tokens decoded whole, verbatim tokens as written
            if token_id is not None and token_id not in self.verbatim:
                run.append(token_id)
                continue
            pieces.append(self.tokenizer.decode(run, skip_special_tokens=skip_special_tokens) if run else "")
            pieces.append("" if token_id is None else self.verbatim[token_id])
            run = []
        return "".join(pieces)

    def chat_template_for(self, offers_tools: bool) -> tuple[str | None, str]:
        """(template, where it came from) for a conversation with or without tools."""
        return self.templates.pick(offers_tools)

    def apply_chat_template(
        self,
        messages: list[dict],
        add_generation_prompt: bool = True,
        tools: list[dict] | None = None,
        **extra,
    ) -> str:
        template, _ = self.chat_template_for(tools is not None)
        return render_chat_template(
            template,
            messages,
            add_generation_prompt,
            special_tokens=self.special_tokens,
            tools=tools,
            **extra,
        )


def load_text_tokenizer(path: str | pathlib.Path, chat_template: str | None = None) -> TextTokenizer:
    """The tokenizer of a model path (alias, .gguf file or HF folder); ``chat_template``, the
    tokenizer.chat_template setting (a path or the template text), replaces the model's templates."""
    templates = None if chat_template is None else templates_from_setting(chat_template)
    resolved = resolve_model_path(str(path))
    if is_gguf(resolved):
        return TextTokenizer.from_gguf(resolved, templates)
    return TextTokenizer.from_hf_folder(resolved, templates)
