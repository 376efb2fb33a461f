"""A ``tokenizers`` Tokenizer built from a GGUF file's tokenizer metadata.

GGUF "gpt2" vocabularies become a byte-level BPE from the file's tokens and merges; control and
user-defined tokens become added tokens so text such as ``<|im_start|>`` maps to its single id.
The tokenizer role serves it; ``serve model upcycle`` saves it as a folder's tokenizer.json.
"""

from __future__ import annotations

import pathlib

from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors

from roles.model_files.gguf_checkpoint import TokenizerMetadata
from roles.model_files.model_path import ModelFileError

_CONTROL, _USER_DEFINED = 3, 4


def _gguf_pre_tokenizer(pre: str | None, source: pathlib.Path):
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    if pre in (None, "default", "gpt2"):
        return byte_level
    if pre == "smollm":
        # SmolLM's own tokenizer (and llama.cpp's "smollm"): every digit is its own piece, then GPT-2 splitting.
        return pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), byte_level])
    raise ModelFileError(f"{source}: pre-tokenizer {pre!r} is not supported (supported: gpt2, smollm)")


def tokenizer_from_gguf(meta: TokenizerMetadata, source: pathlib.Path) -> Tokenizer:
    if meta.model != "gpt2":
        raise ModelFileError(f"{source}: tokenizer model {meta.model!r} is not supported (supported: gpt2)")
    vocab = {token: index for index, token in enumerate(meta.tokens)}
    merges = [tuple(merge.split(" ", 1)) for merge in meta.merges]
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=False, byte_fallback=False))
    tokenizer.pre_tokenizer = _gguf_pre_tokenizer(meta.pre, source)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_tokens(
        [
            AddedToken(meta.tokens[i], special=kind == _CONTROL, normalized=False)
            for i, kind in enumerate(meta.token_types)
            if kind in (_CONTROL, _USER_DEFINED)
        ]
    )
    prefix = [meta.tokens[meta.bos_token_id]] if meta.add_bos_token and meta.bos_token_id is not None else []
    suffix = [meta.tokens[meta.eos_token_id]] if meta.add_eos_token and meta.eos_token_id is not None else []
    if prefix or suffix:
        specials = [(token, vocab[token]) for token in prefix + suffix]
        tokenizer.post_processor = processors.TemplateProcessing(
            single=" ".join(prefix + ["$A"] + suffix), special_tokens=specials
        )
    return tokenizer


def token_text(meta: TokenizerMetadata, index: int | None) -> str | None:
    """The text of token ``index`` (None when the GGUF names no such token)."""
    return None if index is None or not 0 <= index < len(meta.tokens) else meta.tokens[index]
