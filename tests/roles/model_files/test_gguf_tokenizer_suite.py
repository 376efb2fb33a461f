"""llama.cpp's own tokenizer tests, run on our tokenizers: every .inp text of every BPE and SentencePiece
vocabulary of the suite must give the .out ids, called as test-tokenizer-0 calls llama.cpp (no BOS/EOS,
special tokens in the text not parsed), and its ids must decode back to the text."""

from __future__ import annotations

import pytest

from roles.model_files.gguf_tokenizer import gguf_tokenizer_kind
from roles.model_files.tokenizer_metadata import read_tokenizer_metadata
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
