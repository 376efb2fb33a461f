"""Embeddings/s of our EncoderModel vs sentence-transformers on all-minilm-l6-v2, in one process.

Inputs: a fixed, seeded set of English-like sentences of 10..60 words. At batch size B, ours embeds
consecutive groups of B texts (what the serving batcher hands it: no sorting across groups), while
sentence-transformers gets the whole list with ``encode(batch_size=B)`` (it length-sorts the whole list
itself, which favours it). Both include tokenization. Best of the repetitions is reported; repetitions
alternate ours/theirs so load drift on a shared machine hits both alike.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/embeddings.py [--threads N] [--quick]
"""

from __future__ import annotations

import argparse
import os
import pathlib
import random
import sys
import time

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from roles.encoder.encoder_model import EncoderModel  # noqa: E402

BATCH_SIZES = (1, 16, 64)
_WORDS = (
    "the of and to in is was for on that with as by at from his her an which or are this be had not "
    "but they have one were their all we can has there been if more when will would who so no time "
    "people year city river system music world state country history family school water market "
    "language north south early modern small large number public general second several between "
    "during after before under against through within without because however although while "
    "research model data energy network court season album station village island church species "
    "building computer science theory method process result power light sound image story game"
).split()


def make_sentences(count: int, seed: int = 1234) -> list[str]:
    rng = random.Random(seed)
    sentences = []
    for _ in range(count):
        words = [rng.choice(_WORDS) for _ in range(rng.randint(10, 60))]
        sentences.append(" ".join(words).capitalize() + ".")
    return sentences


def time_interleaved(runs: list, repeats: int) -> list[float]:
    """Best seconds of each run; repetitions alternate between the runs so load drift hits all alike."""
    best = [float("inf")] * len(runs)
    for _ in range(repeats):
        for index, run in enumerate(runs):
            started = time.perf_counter()
            run()
            best[index] = min(best[index], time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads for both sides")
    parser.add_argument("--quick", action="store_true", help="fewer sentences and repetitions")
    args = parser.parse_args()

    from sentence_transformers import SentenceTransformer

    count, repeats = (64, 2) if args.quick else (256, 3)
    texts = make_sentences(count)
    ours = EncoderModel.load("all-minilm-l6-v2", threads=args.threads)
    theirs = SentenceTransformer(str(ours.folder), device="cpu")
    lengths = [len(ids) for ids in ours.tokenize(texts)]
    print(
        f"{count} sentences, {min(lengths)}..{max(lengths)} tokens (mean {sum(lengths) / count:.0f}); "
        f"torch threads {torch.get_num_threads()}; best of {repeats}",
        flush=True,
    )

    def run_ours(batch_size: int) -> None:
        for start in range(0, count, batch_size):
            ours.embed_texts(texts[start : start + batch_size])

    def run_theirs(batch_size: int) -> None:
        theirs.encode(texts, batch_size=batch_size, convert_to_tensor=True, show_progress_bar=False)

    run_ours(16)  # warm-up: first calls pay for allocator growth and kernel selection
    run_theirs(16)
    rows = []
    for batch_size in BATCH_SIZES:
        ours_s, theirs_s = time_interleaved(
            [lambda b=batch_size: run_ours(b), lambda b=batch_size: run_theirs(b)], repeats
        )
        rows.append((batch_size, count / ours_s, count / theirs_s))
        print(f"  batch {batch_size}: done", flush=True)

    print(f"\n{'batch':>5} | {'ours emb/s':>10} | {'s-t emb/s':>10} | {'ours/s-t':>8}")
    print("-" * 44)
    for batch_size, ours_rate, theirs_rate in rows:
        print(
            f"{batch_size:>5} | {ours_rate:>10.1f} | {theirs_rate:>10.1f} | {ours_rate / theirs_rate:>7.2f}x"
        )


if __name__ == "__main__":
    main()
