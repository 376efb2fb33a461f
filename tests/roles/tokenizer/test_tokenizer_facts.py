"""What inspect shows of the tokenizer: its kind, pre-tokenizer, vocabulary size and where the chat template
came from, each with the file and key it was read from."""

from __future__ import annotations

import pytest

from roles.tokenizer.tokenizer_facts import tokenizer_facts
from tests.llama_cpp_suite import vocab_path
from tests.tiny_checkpoint import write_tiny_llama


def _by_key(facts: list[dict]) -> dict[str, tuple]:
    return {fact["key"]: (fact["value"], fact["source"]) for fact in facts}


@pytest.mark.parametrize(
    ("name", "kind", "pre", "vocab_size", "pre_key"),
    [
        ("llama-bpe", "gpt2 (byte-level BPE)", "llama-bpe", 128256, "tokenizer.ggml.pre"),
        (
            "llama-spm",
            "llama (SentencePiece BPE (scores, byte fallback))",
            "none (SentencePiece)",
            32000,
            "model",
        ),
        ("gemma-4", "gemma4 (SentencePiece-style BPE (merges, byte fallback))", "gemma4", 262144, "model"),
        ("aquila", "gpt2 (byte-level BPE)", "default", 100008, "no tokenizer.ggml.pre"),
    ],
)
def test_a_gguf_tokenizer_is_described_from_its_metadata(name, kind, pre, vocab_size, pre_key):
    path = vocab_path(name)
    facts = _by_key(tokenizer_facts(str(path), None))
    assert facts["kind"] == (kind, f"{path}: tokenizer.ggml.model")
    assert facts["pre_tokenizer"][0] == pre and pre_key in facts["pre_tokenizer"][1]
    assert facts["vocab_size"] == (vocab_size, f"{path}: tokenizer.ggml.tokens")


def test_the_chat_template_source_is_the_model_or_the_setting(tmp_path):
    path = vocab_path("command-r")
    facts = _by_key(tokenizer_facts(str(path), None))
    assert facts["chat_template"] == (
        "from the model (also named: rag, tool_use)",
        f"model file {path} (tokenizer.chat_template)",
    )
    facts = _by_key(tokenizer_facts(str(path), "{{ messages[0].content }}"))
    assert facts["chat_template"] == (
        "from the setting tokenizer.chat_template",
        "tokenizer.chat_template (template text)",
    )
    value, source = _by_key(tokenizer_facts(str(vocab_path("gpt-2")), None))["chat_template"]
    assert value == "none" and source.startswith("none: ")


def test_a_folder_tokenizer_is_described_from_its_tokenizer_json(tmp_path):
    folder = write_tiny_llama(tmp_path / "tiny")
    facts = _by_key(tokenizer_facts(str(folder), None))
    assert facts["kind"] == ("BPE (tokenizer.json)", f"{folder / 'tokenizer.json'}: model.type")
    assert facts["pre_tokenizer"][0] == "ByteLevel"
    assert facts["vocab_size"][0] == 320
    assert facts["chat_template"] == ("from the model", f"{folder / 'tokenizer_config.json'} (chat_template)")


def test_an_unreadable_model_is_said_not_raised(tmp_path):
    facts = tokenizer_facts(str(tmp_path / "missing.gguf"), None)
    assert facts[0]["value"] is None and facts[0]["source"].startswith("unreadable: ")
