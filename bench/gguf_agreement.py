"""Next-token log-probabilities of roleserve against llama.cpp's llama-server on the same GGUF files.

    .venv/bin/python bench/gguf_agreement.py --llama-server /path/to/llama-server smol-q4_k_m.gguf ...
        [--prompts 48] [--top 10] [--weight-dtype auto]

For each file, each server in turn (alone) answers the same prompts (token ids: natural text tokenised by
roleserve, and seeded random ids) with one greedy token and its top-N log-probabilities (`logprobs` on
/v1/completions). Printed per file: how often the two pick the same next token, and over the tokens both
list whose probability is at least 1% by llama-server, the mean and largest absolute difference of their
log-probabilities (nats; tokens are matched by text, so pieces of a character, which all read U+FFFD,
are left out). llama.cpp multiplies with 8-bit quantised activations, roleserve's auto and exact
with float32 ones, so a few tenths of a nat apart on the likely tokens is their noise; a wrong block layout
moves whole distributions (differences of whole nats, top-1 agreement far below 90%).
"""

from __future__ import annotations

import argparse
import pathlib
import random
import sys

import httpx
import psutil

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.reference_server import reference_server  # noqa: E402
from bench.startup import Server, free_port  # noqa: E402

TEXTS = [
    "The capital of France is",
    "def fibonacci(n):\n    ",
    "Once upon a time, in a small village by the sea,",
    "1, 2, 3, 5, 8, 13,",
    "The boiling point of water in Celsius is",
    "import numpy as np\nx = np.",
    "Photosynthesis is the process by which",
    "SELECT name, age FROM users WHERE",
    "The three primary colors are",
    "In 1969, the first humans landed on",
    "La capitale de l'Italie est",
    "To make a cup of tea, first",
]


def make_prompts(count: int, seed: int) -> list[list[int]]:
    from roles.tokenizer.text_tokenizer import load_text_tokenizer

    tokenizer = load_text_tokenizer("smollm2")
    prompts = [tokenizer.encode(text) for text in TEXTS]
    rng = random.Random(seed)
    while len(prompts) < count:
        prompts.append([rng.randrange(100, 20000) for _ in range(rng.randrange(4, 48))])
    return prompts[:count]


def top_logprobs(choice: dict) -> dict[str, float]:
    """{token text: logprob} of the first generated token, from either server's answer shape; empty when the
    server sent none (llama-server, when the first token ends the text)."""
    logprobs = choice.get("logprobs")
    if not logprobs:
        return {}
    if "content" in logprobs:  # llama-server: the chat shape, with ids
        return {entry["token"]: entry["logprob"] for entry in logprobs["content"][0]["top_logprobs"]}
    return dict(logprobs["top_logprobs"][0])


def ask_all(url: str, prompts: list[list[int]], top: int) -> list[dict[str, float]]:
    out = []
    with httpx.Client(timeout=120) as client:
        for prompt in prompts:
            body = {"model": "model", "prompt": prompt, "max_tokens": 1, "temperature": 0, "logprobs": top}
            response = client.post(url + "/v1/completions", json=body)
            response.raise_for_status()
            out.append(top_logprobs(response.json()["choices"][0]))
    return out


def roleserve_answers(path: str, weight_dtype: str, prompts, top: int) -> list[dict[str, float]]:
    server = Server(
        {
            "model": {"path": path, "served_name": "model"},
            "exec": {"weight_dtype": weight_dtype},
            "memory": {"kv_cache_tokens": 4096},
        }
    )
    try:
        server.wait_ready()
        return ask_all(server.url, prompts, top)
    finally:
        server.stop()


def llama_server_answers(binary: str, path: str, prompts, top: int) -> list[dict[str, float]]:
    port = free_port()
    threads = str(len(psutil.Process().cpu_affinity()))
    argv = [binary, "-m", path, "--host", "127.0.0.1", "--port", str(port), "-t", threads, "-c", "4096"]
    with reference_server(argv, f"http://127.0.0.1:{port}"):
        return ask_all(f"http://127.0.0.1:{port}", prompts, top)


def compare(ours: list[dict[str, float]], theirs: list[dict[str, float]]) -> dict:
    same_top1, diffs, compared = 0, [], 0
    for mine, reference in zip(ours, theirs, strict=True):
        if not mine or not reference:
            continue
        compared += 1
        same_top1 += max(mine, key=mine.get) == max(reference, key=reference.get)
        for token, logprob in reference.items():
            # p >= 1% by llama-server; a piece of a character (U+FFFD) names no one token: not compared
            if logprob >= -4.605 and token in mine and "\ufffd" not in token:
                diffs.append(abs(mine[token] - logprob))
    return {
        "top1": same_top1 / max(1, compared),
        "compared": compared,
        "mean": sum(diffs) / max(1, len(diffs)),
        "max": max(diffs, default=float("nan")),
        "pairs": len(diffs),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--llama-server", required=True)
    parser.add_argument("--prompts", type=int, default=48)
    parser.add_argument("--top", type=int, default=10)
    parser.add_argument("--weight-dtype", default="auto")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    prompts = make_prompts(args.prompts, args.seed)
    rows = []
    for path in args.files:
        name = pathlib.Path(path).name
        print(f"{name} ...", flush=True)
        ours = roleserve_answers(path, args.weight_dtype, prompts, args.top)
        theirs = llama_server_answers(args.llama_server, path, prompts, args.top)
        rows.append((name, compare(ours, theirs)))
        print(f"  {rows[-1][1]}", flush=True)
    print(
        f"\n{'file':<22} {'prompts':>7} {'same top-1':>10} {'|dlogprob| mean':>16} {'max':>7} {'pairs':>6}"
        "   (pairs: tokens both list, p >= 1%)"
    )
    for name, row in rows:
        print(
            f"{name:<22} {row['compared']:>7} {row['top1']:>9.1%} {row['mean']:>16.3f} {row['max']:>7.3f}"
            f" {row['pairs']:>6}"
        )
    print(f"roleserve exec.weight_dtype {args.weight_dtype} against llama-server, {len(prompts)} prompts")


if __name__ == "__main__":
    main()
