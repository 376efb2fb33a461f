"""What each exec.activation_dtype costs in time on the default model (or --model), in process (no server): the prefill of
one 128-token prompt and one decode step of --batch sequences (32; several sizes: a step of each) with
--context tokens cached, the modes alternating round by round in one process so that a shared machine's drift
falls on all of them alike.

    .venv/bin/python bench/activation_speed.py [--modes int16 mixed int8] [--rounds 4] [--context 128]
        [--batch 1 32] [--model smol-q4_k_m.gguf]

Prints each round's best-so-far per mode, then the best of all rounds with each mode's ratio to the first
mode (above 1: faster). Accuracy is bench/accuracy.py's (--activations MODE).
"""

from __future__ import annotations

import argparse
import pathlib
import random
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from bench.decode_step import decode_batch, time_steps  # noqa: E402
from roles.protocol import SamplingFields  # noqa: E402
from roles.scheduler.engine.core import Engine  # noqa: E402
from roles.scheduler.engine.settings import engine_config  # noqa: E402
from roles.scheduler.kernels import native  # noqa: E402
from roles.scheduler.loading.from_file import load_model  # noqa: E402

PROMPT_TOKENS = 128
PREFILLS_PER_ROUND = 3


def prefill_seconds(engine: Engine, rng: random.Random, tag: str) -> float:
    """The best of PREFILLS_PER_ROUND prefills of a fresh random prompt, each run to its first token."""
    params = SamplingFields(temperature=0, max_tokens=1, ignore_eos=True)
    best = float("inf")
    for index in range(PREFILLS_PER_ROUND):
        engine.add_request(
            f"{tag}-{index}", [rng.randrange(1000, 40000) for _ in range(PROMPT_TOKENS)], params
        )
        started = time.perf_counter()
        while engine.has_unfinished():  # the prefill, its one new token, and the request's end
            engine.step()
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--modes", nargs="+", default=["int16", "mixed", "int8"], choices=native.ACTIVATION_DTYPES
    )
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument(
        "--context", type=int, default=128, help="tokens cached per sequence of the decode step"
    )
    parser.add_argument("--batch", type=int, nargs="+", default=[32], help="sequences of each decode step")
    parser.add_argument("--model", default="smollm2", help="a model alias, .gguf file or folder")
    args = parser.parse_args()
    model, shape = load_model(args.model, weight_dtype="auto")
    rng = random.Random(0)
    prefill_engines, steps = {}, {}
    for mode in args.modes:
        native.set_activation_dtype(mode)
        prefill_engines[mode] = Engine(
            engine_config(kv_cache_tokens=4096, activation_dtype=mode), (model, shape)
        )
        for batch in args.batch:
            steps[mode, batch] = decode_batch(model, shape, batch, args.context, "auto", mode, "float32")
    sizes = ", ".join(str(batch) for batch in args.batch)
    print(
        f"{args.model}: kernel path {native.selected_isa()}; {PROMPT_TOKENS}-token prefill, decode steps of "
        f"{sizes} sequences"
    )
    prefill = dict.fromkeys(args.modes, float("inf"))
    step = dict.fromkeys(steps, float("inf"))
    for round_index in range(args.rounds):
        for mode in args.modes:
            native.set_activation_dtype(mode)
            prefill[mode] = min(
                prefill[mode], prefill_seconds(prefill_engines[mode], rng, f"{mode}{round_index}")
            )
            for batch in args.batch:
                engine, inputs = steps[mode, batch]
                step[mode, batch] = min(step[mode, batch], time_steps(model, inputs, engine.kv_cache, 5))
        print(
            f"round {round_index}: prefill ms "
            + " ".join(f"{m}={prefill[m] * 1e3:.1f}" for m in args.modes)
            + " | decode step ms "
            + " ".join(f"{m}@{b}={step[m, b] * 1e3:.2f}" for m, b in steps),
            flush=True,
        )
    first = args.modes[0]
    columns = "".join(f" {batch}-sequence decode step |" for batch in args.batch)
    print(f"\n| exec.activation_dtype | {PROMPT_TOKENS}-token prefill |{columns}")
    print("|---|---|" + "---|" * len(args.batch))
    for mode in args.modes:
        cells = "".join(
            f" {step[mode, b] * 1e3:.2f} ms ({step[first, b] / step[mode, b]:.2f}x) |" for b in args.batch
        )
        print(f"| {mode} | {prefill[mode] * 1e3:.1f} ms ({prefill[first] / prefill[mode]:.2f}x) |{cells}")


if __name__ == "__main__":
    main()
