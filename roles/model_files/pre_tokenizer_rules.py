"""How each BPE pre-tokenizer named in a GGUF file (``tokenizer.ggml.pre``) cuts text before the merges run.

One table, ``PRE_TOKENIZERS``: every name llama.cpp's converter writes, and the names llama.cpp reads as
the same rules, maps to one rule set. A new name is one row. The regexes are llama.cpp's own
(src/llama-vocab.cpp), in the order it applies them: each regex cuts every piece left by the ones before
into its matches and the gaps between them. Names whose rules llama.cpp implements by hand rather than
by regex (kimi-k2, afmoe, superbpe, mmbert) are left out, so a file that names one is refused before the
server starts instead of being cut by rules that only look right.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PreTokenizerRules:
    regexes: tuple[str, ...]  # applied in order; every match and every gap between matches is a piece
    # True: GPT-2's byte-to-character alphabet. False: raw UTF-8 with U+2581 for a space and <0xXX> tokens
    # for bytes no token spells (SentencePiece-style BPE, as Gemma 4's).
    byte_level: bool = True
    ignore_merges: bool = False  # a piece that is itself a token is taken whole
    add_bos: bool = False  # llama.cpp's choice when the file has no tokenizer.ggml.add_bos_token


_CONTRACTIONS = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
_GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"
_CJK = "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+"
_ASCII_PUNCTUATION = r"""[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~]"""
_HAN_KANA = "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+"
_NOT_SPACE_OR_PUNCTUATION = "(\\s|.,!?\u2026\u3002\uff0c\u3001\u0964\u06d4\u060c)"
# The letters DeepSeek LLM keeps together with a leading space: Latin, Greek, Cyrillic, Armenian, ... as
# llama.cpp lists them (code points written out so no editor can normalise them).
_DEEPSEEK_LETTERS = (
    "\\s?[A-Za-z\u00b5\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u01ba\u01bc-\u01bf\u01c4-\u0293\u0295-\u02af"
    "\u0370-\u0373\u0376\u0377\u037b-\u037d\u037f\u0386\u0388-\u038a\u038c\u038e-\u03a1\u03a3-\u03f5"
    "\u03f7-\u0481\u048a-\u052f\u0531-\u0556\u10a0-\u10c5\u13a0-\u13f5\u13f8-\u13fd\u1c90-\u1cba"
    "\u1cbd-\u1cbf\u1d00-\u1d2b\u1d6b-\u1d77\u1d79-\u1d9a\u1e00-\u1f15\u1f18-\u1f1d\u1f20-\u1f45"
    "\u1f48-\u1f4d\u1f50-\u1f57\u1f59\u1f5b\u1f5d\u1f5f-\u1f7d\u1f80-\u1fb4\u1fb6-\u1fbc\u1fbe"
    "\u1fc2-\u1fc4\u1fc6-\u1fcc\u1fd0-\u1fd3\u1fd6-\u1fdb\u1fe0-\u1fec\u1ff2-\u1ff4\u1ff6-\u1ffc\u2102"
    "\u2107\u210a-\u2113\u2115\u2119-\u211d\u2124\u2126\u2128\u212a-\u212d\u212f-\u2134\u2139"
    "\u213c-\u213f\u2145-\u2149\u214e\u2183\u2184\u2c00-\u2c7b\u2c7e-\u2ce4\u2ceb-\u2cee\u2cf2\u2cf3"
    "\ua640-\ua66d\ua680-\ua69b\ua722-\ua76f\ua771-\ua787\ua78b-\ua78e\uab70-\uabbf\ufb00-\ufb06"
    "\ufb13-\ufb17\uff21-\uff3a\uff41-\uff5a\U00010400-\U0001044f\U000104b0-\U000104d3"
    "\U000104d8-\U000104fb\U00010c80-\U00010cb2\U00010cc0-\U00010cf2\U000118a0-\U000118df"
    "\U0001e900-\U0001e943]+"
)
_UPPER_THEN_LOWER = (
    r"[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+"
    r"|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*"
)

DEFAULT = PreTokenizerRules((r"[\p{P}\$\+<=>\^~\|]+", _GPT2, r"\p{N}+", r"[0-9][0-9][0-9]"))
GPT2 = PreTokenizerRules((_GPT2,))
DIGIT_THEN_GPT2 = PreTokenizerRules((r"\p{N}", _GPT2))  # starcoder, refact, command-r, smollm, ...
LLAMA3_SPLIT = (
    _CONTRACTIONS + r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
LLAMA3 = PreTokenizerRules((LLAMA3_SPLIT,), ignore_merges=True, add_bos=True)
LLAMA3_KEEPING_MERGES = PreTokenizerRules((LLAMA3_SPLIT,))  # dbrx, smaug-bpe, chatglm-bpe
GLM4 = PreTokenizerRules((LLAMA3_SPLIT,), ignore_merges=True)
JAIS2 = PreTokenizerRules(
    (
        _CONTRACTIONS + r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
        r"|\s{512}(?!\S)|\s{256}(?!\S)|\s{128}(?!\S)|\s{64}(?!\S)|\s{32}(?!\S)|\s{16}(?!\S)|\s{8}(?!\S)"
        r"|\s{4}(?!\S)|\s{1,2}(?!\S)|\s{1}",
    )
)
QWEN2 = PreTokenizerRules(
    (_CONTRACTIONS + r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",)
)
QWEN35 = PreTokenizerRules(
    (
        _CONTRACTIONS + r"|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+"
        r"|\s+(?!\S)|\s+",
    )
)
DEEPSEEK_LLM = PreTokenizerRules(
    (
        "[\r\n]",
        _DEEPSEEK_LETTERS,
        "\\s?[!-/:-~\uff01-\uff0f\uff1a-\uff5e\u2018-\u201f\u3000-\u3002]+",
        r"\s+$",
        _CJK,
        r"\p{N}+",
    )
)
DEEPSEEK_CODER = PreTokenizerRules(("[\r\n]", r"\s?\p{L}+", r"\s?\p{P}+", _CJK, r"\p{N}"))
DEEPSEEK3 = PreTokenizerRules(
    (
        r"\p{N}{1,3}",
        _HAN_KANA,
        _ASCII_PUNCTUATION
        + r"[A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+"
        r"|\s+(?!\S)|\s+",
    )
)
SPARK2_5 = PreTokenizerRules(
    (
        r"\p{N}{1,3}",
        _HAN_KANA,
        _ASCII_PUNCTUATION
        + r"[A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+|[\r\n]|\s+(?!\S)|\s+",
        r"\p{N}",
    )
)
YOUTU = PreTokenizerRules(
    (
        "[\uac00-\ud7a3\u3131-\u318e]+|[\uff01\u2026\u201c\u201d\u2018\u2019\u2014\uff1a\uff1b\uff0c"
        "\u3001-\u303f\ufe30-\ufe4f]+|[\u3105-\u312f]+|[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+" + _CONTRACTIONS + "?"
        r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*" + _CONTRACTIONS + "?"
        r"|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    ),
    ignore_merges=True,
)
FALCON = PreTokenizerRules((r"[\p{P}\$\+<=>\^~\|`]+", _GPT2, r"[0-9][0-9][0-9]"))
BLOOM = PreTokenizerRules((" ?[^" + _NOT_SPACE_OR_PUNCTUATION + "]+",))
VIKING = PreTokenizerRules((" ?[^" + _NOT_SPACE_OR_PUNCTUATION + "]+", r"\p{N}"))
TEKKEN = PreTokenizerRules(
    (_UPPER_THEN_LOWER + r"|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+",),
    ignore_merges=True,
    add_bos=True,
)
CHAMELEON = PreTokenizerRules(
    (
        r"<sentinel:[0-9]+>",
        r"(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z",
        r"([\t\n]|    |  )",
        r"\p{N}",
        r"[\p{P}!-/:-@\[-`{-~]",
        _GPT2,
    ),
    add_bos=True,
)
GPT4O = PreTokenizerRules(
    (
        r"[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+" + _CONTRACTIONS + "?"
        r"|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*" + _CONTRACTIONS + "?"
        r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    )
)
GRANITE_EMBED_MULTI = PreTokenizerRules(
    (
        r"[^\r\n\p{L}\p{N}]?((?=[\p{L}\p{M}])([^a-z]))*((?=[\p{L}\p{M}])([^A-Z]))+" + _CONTRACTIONS + "?"
        r"|[^\r\n\p{L}\p{N}]?((?=[\p{L}\p{M}])([^a-z]))+((?=[\p{L}\p{M}])([^A-Z]))*" + _CONTRACTIONS + "?"
        r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    ),
    ignore_merges=True,
)
TINY_AYA = PreTokenizerRules(
    (
        r"\d{1,3}(?=(?:\d{3})*\b)",
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+" + _CONTRACTIONS + "?"
        r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*" + _CONTRACTIONS + "?"
        r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    )
)
BAILINGMOE = PreTokenizerRules(
    (
        r"'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
        r"|\s*[\r\n]|\s+(?!\S)|\s+",
    )
)
SEED_CODER = PreTokenizerRules(
    (_CONTRACTIONS + r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+",)
)
UFAKZEKA = PreTokenizerRules(
    (r"[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",)
)
LAGUNA = PreTokenizerRules((r"[^\n]+|[\n]+", QWEN2.regexes[0]))
EXAONE_MOE = PreTokenizerRules(
    (
        _CONTRACTIONS
        + r"|[^\r\n\p{L}\p{N}]?(?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]?"
        r"|\s*[\r\n]|\s+(?!\S)|\s+",
    )
)
MINICPM5 = PreTokenizerRules(
    (
        r"\p{N}{1,3}",
        _CONTRACTIONS
        + r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}+| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    ),
    ignore_merges=True,
)
# SentencePiece-style BPE: spaces become U+2581 first, then only newlines cut the text.
GEMMA4 = PreTokenizerRules((r"[^\n]+|[\n]+",), byte_level=False, add_bos=True)
SARVAM_MOE = PreTokenizerRules((r"[^\n]+|[\n]+",), byte_level=False)

PRE_TOKENIZERS: dict[str, PreTokenizerRules] = {
    "default": DEFAULT,
    "llama3": LLAMA3,
    "llama-v3": LLAMA3,
    "llama-bpe": LLAMA3,
    "falcon3": LLAMA3,
    "falcon-h1": LLAMA3,
    "pixtral": LLAMA3,
    "midm-2.0": LLAMA3,
    "lfm2": LLAMA3,
    "jina-v5-nano": LLAMA3,
    "dbrx": LLAMA3_KEEPING_MERGES,
    "smaug-bpe": LLAMA3_KEEPING_MERGES,
    "chatglm-bpe": LLAMA3_KEEPING_MERGES,
    "glm4": GLM4,
    "glm5": GLM4,
    "jais-2": JAIS2,
    "deepseek-llm": DEEPSEEK_LLM,
    "deepseek-coder": DEEPSEEK_CODER,
    "deepseek-v3": DEEPSEEK3,
    "hunyuan-dense": DEEPSEEK3,
    "hy_v4": DEEPSEEK3,
    "joyai-llm": DEEPSEEK3,
    "spark2_5": SPARK2_5,
    "youtu": YOUTU,
    "falcon": FALCON,
    "gpt-2": GPT2,
    "phi-2": GPT2,
    "mpt": GPT2,
    "olmo": GPT2,
    "jais": GPT2,
    "trillion": GPT2,
    "granite-docling": GPT2,
    "exaone4": GPT2,
    "gigachat": GPT2,
    "a.x-4.0": GPT2,
    "mellum": GPT2,
    "modern-bert": GPT2,
    "jina-es": GPT2,
    "jina-de": GPT2,
    "jina-v2-es": GPT2,
    "jina-v2-de": GPT2,
    "jina-v1-en": GPT2,
    "jina-v2-code": GPT2,
    "roberta-bpe": GPT2,
    "starcoder": DIGIT_THEN_GPT2,
    "refact": DIGIT_THEN_GPT2,
    "command-r": DIGIT_THEN_GPT2,
    "smollm": DIGIT_THEN_GPT2,
    "codeshell": DIGIT_THEN_GPT2,
    "exaone": DIGIT_THEN_GPT2,
    "minerva-7b": DIGIT_THEN_GPT2,
    "mellum2": DIGIT_THEN_GPT2,
    "qwen2": QWEN2,
    "deepseek-r1-qwen": QWEN2,
    "kormo": QWEN2,
    "f2llmv2": QWEN2,
    "megrez": QWEN2,
    "stablelm2": QWEN2,
    "hunyuan": QWEN2,
    "solar-open": QWEN2,
    "grok-2": QWEN2,
    "qwen35": QWEN35,
    "poro-chat": BLOOM,
    "bloom": BLOOM,
    "gpt3-finnish": BLOOM,
    "viking": VIKING,
    "tekken": TEKKEN,
    "chameleon": CHAMELEON,
    "gpt-4o": GPT4O,
    "llama4": GPT4O,
    "kanana2": GPT4O,
    "talkie": GPT4O,
    "minimax-m2": GPT4O,
    "granite-embed-multi-97m": GRANITE_EMBED_MULTI,
    "tiny_aya": TINY_AYA,
    "cohere2moe": TINY_AYA,
    "bailingmoe": BAILINGMOE,
    "bailingmoe2": BAILINGMOE,
    "llada-moe": BAILINGMOE,
    "seed-coder": SEED_CODER,
    "ufakzeka": UFAKZEKA,
    "laguna": LAGUNA,
    "exaone-moe": EXAONE_MOE,
    "minicpm5": MINICPM5,
    "gemma4": GEMMA4,
    "granite-embed-multi-311m": GEMMA4,
    "sarvam-moe": SARVAM_MOE,
}
