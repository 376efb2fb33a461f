"""`serve --model` on a Gemma 3 GGUF made by llama.cpp's converter (the family that differs most from Llama:
local and global layers, sandwich norms, soft-capping): greedy completions over HTTP equal the in-process
engine on the same file, whose tokens equal transformers' (test_family_parity.py), and /roles shows the family
and each layer's attention window."""

from __future__ import annotations

import re

import httpx
import pytest
from serve_harness import ServeProcess
from served_greedy import assert_served_greedy_equals_engine

from roles.tokenizer.text_tokenizer import load_text_tokenizer
from tests.family_checkpoints import write_family_checkpoint
from tests.llama_cpp_converter import convert_to_gguf

# Longer than the 8-position window once tokenized.
PROMPTS = ["The quick brown fox jumps over the lazy dog. Hello world!", "def add(a, b):\n    return a + b\n"]


@pytest.fixture(scope="module")
def gemma3(tmp_path_factory):
    root = tmp_path_factory.mktemp("gemma3")
    return str(convert_to_gguf(write_family_checkpoint("gemma3", root / "hf"), root / "gemma3.gguf"))


@pytest.fixture(scope="module")
def server(gemma3, tmp_path_factory):
    config = {"model": {"path": gemma3}, "memory": {"kv_cache_tokens": 2048}}
    with ServeProcess(tmp_path_factory.mktemp("serve"), config) as running:
        yield running


def test_served_greedy_completions_equal_the_in_process_engine(gemma3, server):
    tokenizer = load_text_tokenizer(gemma3)
    assert all(len(tokenizer.encode(prompt)) > 8 for prompt in PROMPTS)
    assert_served_greedy_equals_engine(server, gemma3, PROMPTS)


def test_roles_shows_the_family_and_its_attention_windows(server):
    processes = httpx.get(server.url + "/roles", timeout=30).json()["processes"]
    [scheduler] = [p for p in processes if p["role"] == "scheduler"]
    facts = {fact["key"]: fact["value"] for fact in scheduler["facts"]["family"]}
    assert facts["family"].startswith("gemma3 (Gemma 3 text")
    assert facts["attention_windows"] == "0-4: 8, 5: full"
    # The served config's KV budget and batch sizes decide the windowed pool's pages.
    assert facts["kv_pool full"].startswith("layers 5: ")
    # a Hugging Face folder's float weights: a float32 cache (memory.kv_cache_dtype auto)
    assert re.fullmatch(r"layers 0-4: \d+ pages of \d+ tokens in float32", facts["kv_pool window 8"])
