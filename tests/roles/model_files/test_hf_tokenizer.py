"""A Hugging Face folder tokenizes exactly as transformers' fast tokenizer loads it: tokenizer.json as the
whole pipeline (BOS/EOS from its post-processor, whatever add_bos_token says), tokenizer_config.json's special
tokens and split_special_tokens applied. One folder per tokenizer kind, written here from a vocabulary of
llama.cpp's suite."""

from __future__ import annotations

import json

import pytest
import transformers

from roles.model_files.tokenizer_metadata import CONTROL, read_tokenizer_metadata
from roles.tokenizer.text_tokenizer import TextTokenizer
from tests.llama_cpp_suite import suite_tokenizer, vocab_path

TEXT = (
    "Grüße aus Zürich! Ça coûte 1234,56 € — 12345678 items.\n\n\n"
    "    indented\tand\t\ttabbed   runs of   spaces  \r\n"
    "日本語のテキストと中文字符。한국어도 있어요. Ελληνικά, русский, العربية.\n"
    "Emoji: 🙂🚀👩\u200d💻 🇫🇷 and ✅✅✅ ... ¿qué? naïve café résumé\n"
)
# vocabulary -> (tokenizer_config.json entries beyond bos/eos, what the folder is of)
FOLDERS = {
    "llama-bpe": ({}, "byte-level BPE, Llama 3 rules; BOS from tokenizer.json's post-processor"),
    "qwen2": ({"add_bos_token": True}, "byte-level BPE, Qwen 2 rules; no BOS (the flag is ignored)"),
    "command-r": ({"add_bos_token": False, "add_eos_token": True}, "byte-level BPE, digits apart; BOS only"),
    "llama-spm": ({"add_bos_token": True}, "SentencePiece BPE with byte fallback"),
    "phi-3": (
        {"add_bos_token": False, "pad_token": "<pad-added-by-config>"},
        "SentencePiece; a new pad token",
    ),
    "gemma-4": ({"add_bos_token": True, "split_special_tokens": True}, "raw UTF-8 BPE; specials as text"),
}


def _write_folder(tmp_path, name: str):
    meta = read_tokenizer_metadata(vocab_path(name))
    folder = tmp_path / name
    folder.mkdir()
    suite_tokenizer(name).save(str(folder / "tokenizer.json"))
    extra, _ = FOLDERS[name]
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": meta.token_text(meta.bos_token_id),
        "eos_token": meta.token_text(meta.eos_token_id),
        **extra,
    }
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    controls = [meta.tokens[i] for i, kind in enumerate(meta.token_types) if kind == CONTROL][:3]
    return folder, controls


@pytest.mark.parametrize("name", sorted(FOLDERS))
def test_folder_ids_and_text_equal_transformers(tmp_path, name):
    folder, controls = _write_folder(tmp_path, name)
    ours, reference = TextTokenizer.from_hf_folder(folder), transformers.AutoTokenizer.from_pretrained(folder)
    texts = [
        TEXT,
        f"{controls[0]}{TEXT}{controls[-1]} tail {controls[1]}\n<pad-added-by-config> x",
        "",
        " ",
        "\n",
    ]
    for text in texts:
        for add_special_tokens in (True, False):
            ids = ours.encode(text, add_special_tokens=add_special_tokens)
            assert ids == reference.encode(text, add_special_tokens=add_special_tokens), (name, text)
        for skip in (True, False):
            assert ours.decode(ids, skip_special_tokens=skip) == reference.decode(
                ids, skip_special_tokens=skip
            )
    assert ours.vocab_size == len(reference)
