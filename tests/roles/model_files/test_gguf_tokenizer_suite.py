"""llama.cpp's own tokenizer tests, run on our tokenizers: every .inp text of every BPE and SentencePiece
vocabulary of the suite must give the .out ids, called as test-tokenizer-0 calls llama.cpp (no BOS/EOS,
special tokens in the text not parsed), and its ids must decode back to the text."""

from __future__ import annotations

import dataclasses

import pytest

from roles.model_files.gguf_tokenizer import gguf_tokenizer_kind, tokenizer_from_gguf
from roles.model_files.tokenizer_metadata import read_tokenizer_metadata
from roles.tokenizer.detokenizer import IncrementalDetokenizer
from roles.tokenizer.text_tokenizer import TextTokenizer
from tests.llama_cpp_suite import (
    MODELS,
    OTHER_VOCABS,
    VOCABS_WITH_CASES,
    VOCABS_WITHOUT_CASES,
    WORDPIECE_VOCABS,
    required,
    suite_tokenizer,
    vocab_cases,
    vocab_path,
)


def test_the_suite_holds_the_vocabularies_checked_here():
    found = {
        path.name[len("ggml-vocab-") : -len(".gguf")] for path in required(MODELS).glob("ggml-vocab-*.gguf")
    }
    assert found == {*VOCABS_WITH_CASES, *VOCABS_WITHOUT_CASES, *WORDPIECE_VOCABS, *OTHER_VOCABS}
    with_cases = {path.name[len("ggml-vocab-") : -len(".gguf.inp")] for path in MODELS.glob("*.gguf.inp")}
    assert with_cases == {*VOCABS_WITH_CASES, *WORDPIECE_VOCABS}


@pytest.mark.parametrize("name", VOCABS_WITH_CASES)
def test_every_text_gives_llama_cpp_ids(name):
    tokenizer = suite_tokenizer(name)
    tokenizer.encode_special_tokens = True  # test-tokenizer-0 calls llama.cpp with parse_special = false
    try:
        cases = vocab_cases(name)
        wrong = [
            (text, ids, got)
            for text, ids in cases
            if (got := tokenizer.encode(text, add_special_tokens=False).ids) != ids
        ]
    finally:
        tokenizer.encode_special_tokens = False
    assert not wrong, f"{name}: {len(cases) - len(wrong)}/{len(cases)} texts exact; first wrong: {wrong[0]}"


@pytest.mark.parametrize("name", VOCABS_WITH_CASES)
def test_ids_decode_back_to_the_text(name):
    tokenizer = suite_tokenizer(name)
    wrong = [
        (text, decoded)
        for text, ids in vocab_cases(name)
        if (decoded := tokenizer.decode(ids, skip_special_tokens=False)) != text
    ]
    assert not wrong, f"{name}: {wrong[:3]}"


@pytest.mark.parametrize("name", VOCABS_WITHOUT_CASES)
def test_vocabularies_without_cases_round_trip_the_suite_texts(name):
    """No .out to compare with: the texts of the Llama 3 cases at least come back whole."""
    tokenizer = suite_tokenizer(name)
    for text, _ in vocab_cases("llama-bpe"):
        ids = tokenizer.encode(text, add_special_tokens=False).ids
        assert tokenizer.decode(ids, skip_special_tokens=False) == text, (name, text)


@pytest.mark.parametrize("name", [*WORDPIECE_VOCABS, *OTHER_VOCABS])
def test_encoder_vocabularies_are_refused_by_name(name):
    path = vocab_path(name)
    with pytest.raises(
        Exception, match=r"tokenizer\.ggml\.model = '(bert|t5)' is not supported \(supported: "
    ):
        gguf_tokenizer_kind(read_tokenizer_metadata(path), path)


# As served: special tokens in the text parsed, BOS as the file (or llama.cpp's default) says. The ids are
# llama.cpp's (llama-tokenize of the pinned version, which parses special tokens by default): BOS is added
# even before a text that starts with BOS, Phi-3's special tokens eat the whitespace after them, a text
# after a special token gets SentencePiece's leading space.
SERVED = {
    "llama-bpe": (
        "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n",
        [128000, 128000, 128006, 882, 128007, 271, 13347, 1070, 128009, 128006, 78191, 128007, 271],
    ),
    "qwen2": (
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n Hi  there<|im_end|>\n<|im_start|>assistant\n",
        [151644, 8948, 198, 3430, 9814, 13, 151645, 198, 151644, 872, 198, 21018, 220, 1052, 151645, 198]
        + [151644, 77091, 198],
    ),
    "llama-spm": (
        "<s>[INST] Hello there [/INST] Sure</s><s>[INST]  again [/INST]",
        [1, 1, 518, 25580, 29962, 15043, 727, 518, 29914, 25580, 29962, 18585, 2, 1, 518, 25580, 29962, 29871]
        + [1449, 518, 29914, 25580, 29962],
    ),
    "phi-3": (
        "<|user|>\nHi there<|end|>\n<|assistant|>\n Sure <|end|> x</s> y",
        [1, 32010, 6324, 727, 32007, 32001, 18585, 29871, 32007, 921, 2, 343],
    ),
    "gemma-4": (
        "<bos><|turn>user\nHi there<turn|>\n<|turn>model\n",
        [2, 2, 105, 2364, 107, 10979, 993, 106, 107, 105, 4368, 107],
    ),
    "command-r": (
        "<BOS_TOKEN><|START_OF_TURN_TOKEN|><|USER_TOKEN|>Hi<|END_OF_TURN_TOKEN|>",
        [5, 5, 255000, 255006, 37535, 255001],
    ),
    "mpt": ("a<|endoftext|>  b", [66, 0, 50276, 67]),
}


@pytest.mark.parametrize("name", sorted(SERVED))
def test_served_text_with_special_tokens_gives_llama_cpp_ids(name):
    text, ids = SERVED[name]
    assert suite_tokenizer(name).encode(text).ids == ids


@pytest.mark.parametrize("name", ["deepseek-llm", "deepseek-coder"])
def test_user_defined_tokens_read_as_written(name):
    """DeepSeek's vocabularies hold "ö", "ÿ", ... as user-defined tokens: llama.cpp matches them in the text
    and shows them as written, not as the one byte GPT-2's alphabet makes of them."""
    tokenizer = TextTokenizer.from_gguf(vocab_path(name))
    ids = tokenizer.encode("wörld ÿ", add_special_tokens=False)
    assert [tokenizer.tokenizer.id_to_token(i) for i in ids][1] == "ö"
    assert tokenizer.decode(ids) == "wörld ÿ"
    detokenizer = IncrementalDetokenizer(tokenizer)
    assert "".join(detokenizer.push(i) for i in ids) + detokenizer.flush() == "wörld ÿ"


def test_sentencepiece_merges_word_by_word_only_when_no_token_joins_words():
    path = vocab_path("llama-spm")
    meta = read_tokenizer_metadata(path)
    assert tokenizer_from_gguf(meta, path).pre_tokenizer is not None
    joining = dataclasses.replace(
        meta,
        tokens=[*meta.tokens, "a\u2581b"],
        scores=[*meta.scores, 0.0],
        token_types=[*meta.token_types, 1],
    )
    assert tokenizer_from_gguf(joining, path).pre_tokenizer is None
