"""What each exec.activation_dtype costs in time on the default model, in process (no server): the prefill of
one 128-token prompt and one decode step of 32 sequences with --context tokens cached, the modes alternating
round by round in one process so that a shared machine's drift falls on all of them alike.

    .venv/bin/python bench/activation_speed.py [--modes int16 mixed int8] [--rounds 4] [--context 128]

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
BATCH = 32


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
    args = parser.parse_args()
    model, shape = load_model("smollm2", weight_dtype="auto")
    rng = random.Random(0)
    prefill_engines, steps = {}, {}
    for mode in args.modes:
        native.set_activation_dtype(mode)
        prefill_engines[mode] = Engine(
            engine_config(kv_cache_tokens=4096, activation_dtype=mode), (model, shape)
        )
        steps[mode] = decode_batch(model, shape, BATCH, args.context, "auto", mode, "float32")
    print(f"kernel path {native.selected_isa()}; {PROMPT_TOKENS}-token prefill, {BATCH}-sequence decode step")
    prefill = dict.fromkeys(args.modes, float("inf"))
    step = dict.fromkeys(args.modes, float("inf"))
    for round_index in range(args.rounds):
        for mode in args.modes:
            native.set_activation_dtype(mode)
            prefill[mode] = min(
                prefill[mode], prefill_seconds(prefill_engines[mode], rng, f"{mode}{round_index}")
            )
            engine, batch = steps[mode]
            step[mode] = min(step[mode], time_steps(model, batch, engine.kv_cache, 5))
        print(
            f"round {round_index}: prefill ms "
            + " ".join(f"{m}={prefill[m] * 1e3:.1f}" for m in args.modes)
            + " | decode step ms "
            + " ".join(f"{m}={step[m] * 1e3:.1f}" for m in args.modes),
            flush=True,
        )
    first = args.modes[0]
    print(f"\n| exec.activation_dtype | {PROMPT_TOKENS}-token prefill | {BATCH}-sequence decode step |")
    print("|---|---|---|")
    for mode in args.modes:
        print(
            f"| {mode} | {prefill[mode] * 1e3:.1f} ms ({prefill[first] / prefill[mode]:.2f}x) "
            f"| {step[mode] * 1e3:.1f} ms ({step[first] / step[mode]:.2f}x) |"
        )


if __name__ == "__main__":
    main()
