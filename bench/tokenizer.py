"""Tokens/s of our GGUF tokenizers against llama.cpp's own (`llama-tokenize`), on the same vocabulary files
and the same 1 MiB multilingual text; and whether the two give the same ids over the whole text.

The vocabularies are those of llama.cpp's tokenizer suite (`make venv` unpacks them into
.cache/llama-cpp-tests/models): byte-level BPE (Llama 3, Qwen 2, DeepSeek LLM, Command-R), SentencePiece
(Llama 2, Phi-3) and Gemma 4's raw-UTF-8 BPE. The text is seeded: sentences in twelve scripts, code, numbers
and emoji, plus as many invented words, so that neither side lives off repeated words.

Ours: `TextTokenizer.encode`'s call in a fresh process per vocabulary, as the tokenizer role makes it (one
thread, no BOS, special tokens in the text parsed), best of --repeat. llama.cpp: `llama-tokenize -f text --ids
--no-bos --no-escape` (it parses special tokens by default), best of --repeat, minus the best time of the same
command on a one-character file (process start and vocabulary load). Neither side's vocabulary load is
counted. Run it alone on the machine:

    flock /work/refs/bench.lock .venv/bin/python bench/tokenizer.py --llama-tokenize PATH/llama-tokenize
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import pathlib
import random
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from roles.model_files.gguf_tokenizer import gguf_tokenizer_kind, tokenizer_from_gguf  # noqa: E402
from roles.model_files.tokenizer_metadata import read_tokenizer_metadata  # noqa: E402

MODELS = pathlib.Path(__file__).resolve().parent.parent / ".cache" / "llama-cpp-tests" / "models"
VOCABS = ("llama-bpe", "qwen2", "deepseek-llm", "command-r", "llama-spm", "phi-3", "gemma-4")
SENTENCES = (
    "The quick brown fox jumps over the lazy dog while 42 people watch in silence.",
    "It's a well-known fact that they'll arrive at 9:30, won't they? I'd say so.",
    "Die Straße in München ist 1,5 km lang; Grüße aus Köln und Zürich!",
    "Le café coûte 3,20 € à Paris — c'est déjà trop cher, n'est-ce pas ?",
    "El niño comió una piña en la montaña, ¿verdad? ¡Qué día!",
    "Москва — столица России, а Санкт-Петербург — её культурный центр.",
    "我想在苹果公司工作，因为那里的技术非常先进。今天天气很好。",
    "東京は日本の首都です。ひらがなとカタカナと漢字を使います。",
    "한국어는 세종대왕이 만든 한글로 씁니다. 서울은 큰 도시입니다.",
    "اللغة العربية جميلة جدا، وهي لغة القرآن الكريم.",
    "हिन्दी भारत की एक प्रमुख भाषा है और इसे देवनागरी में लिखा जाता है।",
    "Η Αθήνα είναι η πρωτεύουσα της Ελλάδας και έχει μακρά ιστορία.",
    "Tiếng Việt có nhiều dấu thanh: sắc, huyền, hỏi, ngã, nặng.",
    "def tokenize(text: str) -> list[int]:\n    return [ord(c) for c in text if c.isalnum()]\n",
    'for (int i = 0; i < n; ++i) { sum += x[i] * 0.5f; }  // {"key": [1, 2, 3]}',
    "Emoji 🚀🙂👩\u200d💻🇫🇷 and ✅ mixed with 12345678901234 digits.\n\n\t  indented   spaces",
)
SYLLABLES = (
    ("ka", "re", "mi", "to", "shu", "lan", "ber", "qui", "vo", "str", "ing", "tion", "ö", "ç", "ñ"),
    ("ра", "ко", "ли", "мы", "ств", "ож", "ен", "ий"),
    ("的", "是", "在", "人", "有", "大", "中", "国", "年", "学"),
    ("か", "き", "く", "け", "こ", "ア", "イ", "ウ", "ン", "語"),
    ("가", "나", "다", "라", "마", "한", "국", "어"),
    ("ب", "ت", "ث", "ج", "ح", "خ", "د", "ر", "س"),
)


def make_text(size: int = 2**20, seed: int = 25) -> str:
    rng = random.Random(seed)
    parts, length = [], 0
    while length < size:
        if rng.random() < 0.5:
            piece = rng.choice(SENTENCES)
        else:
            script = rng.choice(SYLLABLES)
            words = [
                "".join(rng.choice(script) for _ in range(rng.randint(1, 4)))
                for _ in range(rng.randint(3, 12))
            ]
            piece = " ".join(words) + rng.choice((". ", ", ", "! ", "\n", f" {rng.randint(0, 10**6)} "))
        parts.append(piece + rng.choice((" ", " ", "\n", "  ")))
        length += len(parts[-1].encode())
    return "".join(parts).encode()[:size].decode(errors="ignore")


def encode(tokenizer, text: str) -> list[int]:
    """As TextTokenizer.encode: ids only, no offsets, special tokens in the text parsed."""
    return tokenizer.encode_batch_fast([text], add_special_tokens=False)[0].ids


def measure_ours(path: pathlib.Path, text_file: pathlib.Path, repeat: int) -> tuple[list[int], float]:
    """(ids, best seconds) of our tokenizer of ``path`` on the text."""
    tokenizer = tokenizer_from_gguf(read_tokenizer_metadata(path), path)
    text = text_file.read_text(encoding="utf-8")
    return encode(tokenizer, text), best_seconds(repeat, encode, tokenizer, text)


def best_seconds(repeat: int, run, *args) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        run(*args)
        best = min(best, time.perf_counter() - started)
    return best


def run_llama_tokenize(binary: str, vocab: pathlib.Path, text_file: pathlib.Path) -> str:
    command = [binary, "-m", str(vocab), "-f", str(text_file), "--ids", "--no-bos", "--no-escape"]
    return subprocess.run([*command, "--log-disable"], capture_output=True, text=True, check=True).stdout


def llama_tokenize(binary: str, vocab: pathlib.Path, text_file: pathlib.Path) -> list[int]:
    return json.loads(run_llama_tokenize(binary, vocab, text_file).strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--llama-tokenize", help="llama.cpp's llama-tokenize (without it, ours alone)")
    parser.add_argument("--vocabs", nargs="+", default=VOCABS)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    text = make_text()
    work = pathlib.Path(tempfile.mkdtemp(prefix="tokenizer-bench-"))
    text_file, one_char = work / "text.txt", work / "one.txt"
    text_file.write_text(text, encoding="utf-8")
    one_char.write_text("a", encoding="utf-8")
    print(f"text: {len(text.encode()):,} bytes, {len(text):,} characters")
    print(
        f"{'vocabulary':<14} {'kind':<32} {'tokens':>8} {'ours tok/s':>12} {'llama.cpp tok/s':>16} {'ratio':>6}  ids"
    )
    for name in args.vocabs:
        path = MODELS / f"ggml-vocab-{name}.gguf"
        if not path.is_file():
            sys.exit(f"{path} is missing: `make venv` unpacks llama.cpp's tokenizer suite")
        kind = gguf_tokenizer_kind(read_tokenizer_metadata(path), path)
        # A fresh process per vocabulary, as a tokenizer process holds one: after other large vocabularies
        # were built and dropped in the same process, the same encode ran a quarter slower.
        with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as fresh:
            ids, seconds = fresh.submit(measure_ours, path, text_file, args.repeat).result()
        ours = len(ids) / seconds
        theirs, same = float("nan"), "-"
        if args.llama_tokenize:
            reference = llama_tokenize(args.llama_tokenize, path, text_file)
            start = best_seconds(args.repeat, run_llama_tokenize, args.llama_tokenize, path, one_char)
            whole = best_seconds(args.repeat, run_llama_tokenize, args.llama_tokenize, path, text_file)
            theirs = len(reference) / max(whole - start, 1e-9)
            first = next((i for i, (a, b) in enumerate(zip(ids, reference, strict=False)) if a != b), None)
            if first is None and len(ids) == len(reference):
                same = "identical"
            else:
                same = f"differ from token {first if first is not None else min(len(ids), len(reference))}"
        kind_name = f"{kind.model}/{kind.pre or 'spm'}"
        print(
            f"{name:<14} {kind_name:<32} {len(ids):>8,} {ours:>12,.0f} {theirs:>16,.0f} {ours / theirs:>6.2f}  {same}"
        )


if __name__ == "__main__":
    main()
