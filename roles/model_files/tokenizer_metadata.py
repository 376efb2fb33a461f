"""The tokenizer a GGUF file carries in its metadata (``tokenizer.ggml.*`` and ``tokenizer.chat_template*``).

Read from the container alone, whatever the file's architecture: the tokenizer role and `serve config
validate` need the vocabulary of any model, and llama.cpp's vocabulary-only files name architectures the
model code does not run. Flags the file leaves out stay None here; the tokenizer kind supplies llama.cpp's
default for them (add BOS for SentencePiece and Llama 3, a leading space for SentencePiece).
"""

from __future__ import annotations

import functools
import pathlib
from collections.abc import Mapping
from dataclasses import dataclass, field

from roles.model_files.gguf_file import GGUFFormatError, open_gguf
from roles.model_files.model_path import ModelFileError

# llama.cpp's token types (tokenizer.ggml.token_type).
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
_TEMPLATE_PREFIX = "tokenizer.chat_template."
# The texts llama.cpp takes for the end of a turn in any vocabulary that has them (its end-of-generation
# list): a chat model's turn often ends with one of these rather than with the file's EOS token.
_END_OF_GENERATION_TEXTS = frozenset(
    (
        "<|eot_id|>",
        "<|im_end|>",
        "<|end|>",
        "<|return|>",
        "<|call|>",
        "<|flush|>",
        "<|calls|>",
        "<end_of_turn>",
        "<|endoftext|>",
        "</s>",
        "<|eom_id|>",
        "<EOT>",
        "_<EOT>",
        "[EOT]",
        "[EOS]",
        "<|end_of_text|>",
        "<end_of_utterance>",
        "<eos>",
        "<turn|>",
        "<|tool_response>",
        "<\uff5cend\u2581of\u2581sentence\uff5c>",
        "[e~[",
    )
)


@dataclass(frozen=True)
class TokenizerMetadata:
    model: str  # tokenizer.ggml.model: "gpt2" (byte-level BPE), "llama" (SentencePiece), "gemma4", ...
    pre: str | None  # tokenizer.ggml.pre: the pre-tokenizer's name, e.g. "llama-bpe"
    tokens: list[str]
    merges: list[str]
    token_types: list[int]  # NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED or BYTE per token
    bos_token_id: int | None
    eos_token_id: int | None
    pad_token_id: int | None
    unknown_token_id: int | None
    chat_template: str | None
    add_bos_token: bool | None  # None: the file does not say
    add_eos_token: bool | None
    scores: list[float] | None = None  # SentencePiece: a merge's priority is its result's score
    add_space_prefix: bool | None = None
    eot_token_id: int | None = None
    eom_token_id: int | None = None
    model_name: str | None = None  # general.name
    # tokenizer.chat_template.<name> (tool_use, rag, ...): transformers picks "tool_use" when tools are given
    named_chat_templates: dict[str, str] = field(default_factory=dict)

    @property
    def vocab_size(self) -> int:
        return len(self.tokens)

    @functools.cached_property
    def ids_by_text(self) -> dict[str, int]:
        """Token text -> id (of two tokens with one text, the later), made once: the vocabulary a BPE model
        is built from, and what finds the tokens named by their text."""
        return dict(zip(self.tokens, range(len(self.tokens)), strict=True))

    @functools.cached_property
    def special_ids(self) -> list[int]:
        """The ids, in order, of every token whose type is not NORMAL (a few hundred of ~50k), made once for
        the passes that look only at those."""
        return [index for index, kind in enumerate(self.token_types) if kind != NORMAL]

    def end_of_generation_ids(self) -> frozenset[int]:
        """EOS, EOT and EOM, and every token llama.cpp ends a turn at by its text. As llama.cpp: with
        gpt-oss's <|return|> and <|call|>, <|end|> only ends a message; beside Gemma 4's <|tool_response>,
        </s> is an ordinary token."""
        ids = {i for i in (self.eos_token_id, self.eot_token_id, self.eom_token_id) if self.token_text(i)}
        ids_by_text = self.ids_by_text
        by_text = {text: ids_by_text[text] for text in _END_OF_GENERATION_TEXTS if text in ids_by_text}
        if {"<|return|>", "<|call|>"} <= by_text.keys() or {"<|calls|>", "<|flush|>"} <= by_text.keys():
            by_text.pop("<|end|>", None)
        if "<|tool_response>" in by_text:
            by_text.pop("</s>", None)
        return frozenset(ids | set(by_text.values()))

    def token_text(self, index: int | None) -> str | None:
        """The text of token ``index`` (None when the file names no such token)."""
        return None if index is None or not 0 <= index < len(self.tokens) else self.tokens[index]


def tokenizer_metadata_from_fields(fields: Mapping[str, object], path: pathlib.Path) -> TokenizerMetadata:
    tokens = fields.get("tokenizer.ggml.tokens")
    if not tokens:
        raise ModelFileError(f"{path}: no tokenizer in the GGUF metadata (tokenizer.ggml.tokens)")

    def optional_int(key: str) -> int | None:
        value = fields.get(key)
        return None if value is None else int(value)

    def optional_bool(key: str) -> bool | None:
        value = fields.get(key)
        return None if value is None else bool(value)

    scores = fields.get("tokenizer.ggml.scores")
    token_types = fields.get("tokenizer.ggml.token_type") or [NORMAL] * len(tokens)
    named = {
        key[len(_TEMPLATE_PREFIX) :]: str(value)
        for key, value in fields.items()
        if key.startswith(_TEMPLATE_PREFIX) and isinstance(value, str)
    }
    return TokenizerMetadata(
        model=str(fields.get("tokenizer.ggml.model", "gpt2")),
        pre=None if fields.get("tokenizer.ggml.pre") is None else str(fields["tokenizer.ggml.pre"]),
        tokens=list(tokens),
        merges=list(fields.get("tokenizer.ggml.merges") or []),
        token_types=list(map(int, token_types)),
        bos_token_id=optional_int("tokenizer.ggml.bos_token_id"),
        eos_token_id=optional_int("tokenizer.ggml.eos_token_id"),
        pad_token_id=optional_int("tokenizer.ggml.padding_token_id"),
        unknown_token_id=optional_int("tokenizer.ggml.unknown_token_id"),
        chat_template=fields.get("tokenizer.chat_template"),
        add_bos_token=optional_bool("tokenizer.ggml.add_bos_token"),
        add_eos_token=optional_bool("tokenizer.ggml.add_eos_token"),
        scores=None if scores is None else [float(s) for s in scores],
        add_space_prefix=optional_bool("tokenizer.ggml.add_space_prefix"),
        eot_token_id=optional_int("tokenizer.ggml.eot_token_id"),
        eom_token_id=optional_int("tokenizer.ggml.eom_token_id"),
        model_name=None if fields.get("general.name") is None else str(fields["general.name"]),
        named_chat_templates=named,
    )


def read_tokenizer_metadata(path: str | pathlib.Path) -> TokenizerMetadata:
    """The tokenizer metadata of a GGUF file, opened for its header alone."""
    path = pathlib.Path(path)
    try:
        fields = open_gguf(path).fields
    except (OSError, GGUFFormatError) as error:
        raise ModelFileError(f"{path} is not a readable GGUF file: {error}") from error
    return tokenizer_metadata_from_fields(fields, path)
