"""A ``tokenizers`` Tokenizer built from a GGUF file's tokenizer metadata, cutting text as llama.cpp does.

Three kinds (``tokenizer.ggml.model``):

- ``gpt2``: byte-level BPE with the file's merges, after the pre-tokenizer its ``tokenizer.ggml.pre``
  names (pre_tokenizer_rules.py: one rule set per name, llama.cpp's regexes);
- ``llama``: SentencePiece BPE. The file stores scores, not merges: the merges are ranked by score
  (sentencepiece_merges.py); spaces become U+2581, with one in front of the text and after every special
  token (``add_space_prefix``); a character no token spells falls back to <0xXX> byte tokens;
- ``gemma4``: BPE with merges over raw UTF-8, spaces as U+2581, byte fallback (Gemma 4).

Control and unknown tokens become special added tokens and user-defined ones plain added tokens, so text
such as ``<|im_start|>`` maps to its single id. BOS/EOS are added as the file says, or as llama.cpp does
when it does not. The tokenizer role serves it; ``serve model upcycle`` saves it as a folder's tokenizer.json.
"""

from __future__ import annotations

import difflib
import pathlib
import re
from dataclasses import dataclass

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

from roles.model_files.model_path import ModelFileError
from roles.model_files.pre_tokenizer_rules import PRE_TOKENIZERS, PreTokenizerRules
from roles.model_files.sentencepiece_merges import sentencepiece_merges
from roles.model_files.tokenizer_metadata import CONTROL, UNKNOWN, USER_DEFINED, TokenizerMetadata

SPACE = "\u2581"  # SentencePiece's visible space
# A token with a space marker right after another character: one that can join two words.
_JOINS_WORDS = re.compile(f"[^{SPACE}]{SPACE}")
SUPPORTED_MODELS = ("gpt2", "llama", "gemma4")
_KIND_NAMES = {
    "gpt2": "byte-level BPE",
    "llama": "SentencePiece BPE (scores, byte fallback)",
    "gemma4": "SentencePiece-style BPE (merges, byte fallback)",
}


@dataclass(frozen=True)
class GGUFTokenizerKind:
    """What a GGUF file's tokenizer is, checked: its model and, for BPE, its pre-tokenizer and rules."""

    model: str
    pre: str | None  # the pre-tokenizer's name as llama.cpp reads it ("default" when the file names none)
    rules: PreTokenizerRules | None  # None for SentencePiece, which has no pre-tokenizer

    def describe(self) -> str:
        return f"{self.model} ({_KIND_NAMES[self.model]})"


def gguf_tokenizer_kind(meta: TokenizerMetadata, source: pathlib.Path) -> GGUFTokenizerKind:
    """The checked kind of ``meta``; ModelFileError naming the file, the key, the value and what is supported."""
    if meta.model not in SUPPORTED_MODELS:
        raise ModelFileError(
            f"{source}: tokenizer.ggml.model = {meta.model!r} is not supported "
            f"(supported: {', '.join(SUPPORTED_MODELS)}; the WordPiece 'bert' vocabularies are the encoder's)"
        )
    if meta.model == "llama":
        return GGUFTokenizerKind("llama", None, None)
    pre = "gemma4" if meta.model == "gemma4" else (meta.pre or "default")
    if pre not in PRE_TOKENIZERS:
        close = difflib.get_close_matches(pre, PRE_TOKENIZERS, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ModelFileError(
            f"{source}: tokenizer.ggml.pre = {pre!r} is not supported{hint} "
            f"(supported: {', '.join(PRE_TOKENIZERS)})"
        )
    return GGUFTokenizerKind(meta.model, pre, PRE_TOKENIZERS[pre])


def _bpe_from_merges(meta: TokenizerMetadata, rules: PreTokenizerRules) -> Tokenizer:
    vocab = meta.ids_by_text
    merges = [tuple(merge.split(" ", 1)) for merge in meta.merges]
    splits = [pre_tokenizers.Split(Regex(regex), behavior="isolated") for regex in rules.regexes]
    if rules.byte_level:
        tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=merges, ignore_merges=rules.ignore_merges))
        splits.append(pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False))
        tokenizer.decoder = decoders.ByteLevel()
    else:
        tokenizer = Tokenizer(
            models.BPE(vocab=vocab, merges=merges, ignore_merges=rules.ignore_merges, byte_fallback=True)
        )
        tokenizer.normalizer = normalizers.Replace(" ", SPACE)
        tokenizer.decoder = decoders.Sequence(
            [decoders.Replace(SPACE, " "), decoders.ByteFallback(), decoders.Fuse()]
        )
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(splits)
    return tokenizer


def _sentencepiece_bpe(meta: TokenizerMetadata, source: pathlib.Path) -> Tokenizer:
    if meta.scores is None:
        raise ModelFileError(
            f"{source}: a SentencePiece vocabulary needs tokenizer.ggml.scores, which is missing"
        )
    vocab = meta.ids_by_text
    unknown = meta.token_text(0 if meta.unknown_token_id is None else meta.unknown_token_id)
    model = models.BPE(
        vocab=vocab,
        merges=sentencepiece_merges(meta.tokens, meta.scores),
        unk_token=unknown,
        fuse_unk=True,
        byte_fallback=True,
    )
    tokenizer = Tokenizer(model)
    add_space_prefix = meta.add_space_prefix is not False
    spaces = [normalizers.Replace(" ", SPACE)]
    decoding = [decoders.Replace(SPACE, " "), decoders.ByteFallback(), decoders.Fuse()]
    if add_space_prefix:  # llama.cpp strips the space it added in front when it decodes a text
        spaces.insert(0, normalizers.Prepend(SPACE))
        decoding.append(decoders.Strip(" ", 1, 0))
    tokenizer.normalizer = normalizers.Sequence(spaces)
    tokenizer.decoder = decoders.Sequence(decoding)
    if not any(_JOINS_WORDS.search(token) for token in meta.tokens):
        # No merge can join across the start of a word then, so each word is merged alone: the same ids as
        # merging the whole text at once, a quarter faster (and the model's word cache can serve).
        tokenizer.pre_tokenizer = pre_tokenizers.Split(
            Regex(f"{SPACE}*[^{SPACE}]+|{SPACE}+"), behavior="isolated"
        )
    return tokenizer


def _rstrips(meta: TokenizerMetadata) -> set[str]:
    """llama.cpp strips the whitespace after Phi-3's special tokens, as Phi-3's tokenizer_config.json does."""
    name = (meta.model_name or "").lower()
    if "phi-3" not in name and "phi3" not in name:
        return set()
    specials = {
        meta.tokens[i] for i in meta.special_ids if meta.token_types[i] in (CONTROL, USER_DEFINED, UNKNOWN)
    }
    return (specials | {"</s>"}) - {"<unk>", "<s>", "<|endoftext|>"}


def _added_tokens(meta: TokenizerMetadata) -> list[AddedToken]:
    rstrips = _rstrips(meta)
    return [
        AddedToken(
            meta.tokens[i], special=kind != USER_DEFINED, normalized=False, rstrip=meta.tokens[i] in rstrips
        )
        for i in meta.special_ids
        if (kind := meta.token_types[i]) in (CONTROL, USER_DEFINED, UNKNOWN)
    ]


def adds_bos(meta: TokenizerMetadata, kind: GGUFTokenizerKind) -> bool:
    """Whether encoding a text puts BOS in front: the file's flag, else llama.cpp's default for the kind."""
    if meta.add_bos_token is not None:
        return meta.add_bos_token
    return kind.rules is None or kind.rules.add_bos


def tokenizer_from_gguf(meta: TokenizerMetadata, source: pathlib.Path) -> Tokenizer:
    kind = gguf_tokenizer_kind(meta, source)
    tokenizer = _sentencepiece_bpe(meta, source) if kind.rules is None else _bpe_from_merges(meta, kind.rules)
    tokenizer.add_tokens(_added_tokens(meta))
    ends = [
        meta.bos_token_id if adds_bos(meta, kind) else None,
        meta.eos_token_id if meta.add_eos_token else None,
    ]
    bos, eos = ((meta.token_text(i), i) if meta.token_text(i) is not None else None for i in ends)
    if bos or eos:
        pieces = ([bos[0]] if bos else []) + ["$A"] + ([eos[0]] if eos else [])
        tokenizer.post_processor = processors.TemplateProcessing(
            single=" ".join(pieces), special_tokens=[end for end in (bos, eos) if end]
        )
    return tokenizer


def verbatim_tokens(meta: TokenizerMetadata, tokenizer: Tokenizer) -> dict[int, str]:
    """User-defined tokens the decoder would change, by id: llama.cpp shows them as they are written (DeepSeek's
    vocabularies hold "ö" and the like as user-defined tokens, which GPT-2's byte alphabet reads as one byte)."""
    return {
        index: meta.tokens[index]
        for index in meta.special_ids
        if meta.token_types[index] == USER_DEFINED
        and tokenizer.decode([index], skip_special_tokens=False) != meta.tokens[index]
    }


def token_text(meta: TokenizerMetadata, index: int | None) -> str | None:
    """The text of token ``index`` (None when the GGUF names no such token)."""
    return meta.token_text(index)
