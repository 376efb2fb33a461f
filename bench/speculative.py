"""Speculative decoding (exec.speculative_method: ngram, or draft_model with --draft-model) at one request at
a time, in process on the default model or --model: an edit whose answer quotes its prompt, where drafts are
kept, beside random ids.

    .venv/bin/python bench/speculative.py [--draft-tokens 1 2 3 4 6] [--max-tokens 128] [--repeats 3]
    .venv/bin/python bench/speculative.py --model smol-f16.gguf --draft-model smollm2 [--tasks edit]

For each task: generation with speculation off, then on with each --draft-tokens k; the best of
--repeats runs of tokens per second (first token to last), the kept share of drafted tokens, tokens per
verification step, tokens per engine step, and the ratio to off. With --forwards, one more run with every
forward of the served and the draft model timed: the median ms by number of rows, where a step's time goes.
Greedy output must be the same tokens with and without speculation: the run stops with an error if it is not.

Greedy decoding of random ids soon loops on this model (and the loop is drafted and kept), so random ids
are also sampled (temperature 1, seeded): an answer that never repeats, where drafts are rarely found,
which shows what speculation costs when it cannot help.
"""

from __future__ import annotations

import argparse
import dataclasses
import pathlib
import random
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from roles.protocol import SamplingFields  # noqa: E402
from roles.scheduler.engine.core import Engine  # noqa: E402
from roles.scheduler.engine.settings import engine_config  # noqa: E402
from roles.scheduler.loading.from_file import load_model  # noqa: E402
from roles.scheduler.speculative.draft_model import DraftModelSpeculator  # noqa: E402
from roles.tokenizer.text_tokenizer import load_text_tokenizer  # noqa: E402

PARAGRAPH = (
    "The city council met on Tuesday evening to discuss the new budget. After a long debate, the members "
    "agreed to increase funding for public libraries and to repair the old bridge over the river. The "
    "mayor said that the decision would help families, students and small businesses across the region, "
    "and that work on the bridge would begin in the spring. Several residents spoke during the meeting, "
    "asking the council to also consider more bus routes and longer opening hours for the parks."
)
TASKS = ("edit", "random", "random-sampled")
EDIT = f"Repeat the following text exactly, word for word:\n\n{PARAGRAPH}"


def run(engine: Engine, prompt: list[int], params: SamplingFields) -> tuple[list[int], float, int]:
    """(output ids, seconds from first token to last, engine steps after the first token)."""
    max_tokens = params.max_tokens
    engine.add_request("bench", prompt, params)
    tokens: list[int] = []
    started, num_steps = None, 0
    for _ in range(10 * max_tokens):  # bounded: at least one token per step
        if not engine.has_unfinished():
            break
        outputs = engine.step()
        if started is not None:
            num_steps += 1
        tokens += [o.token_id for o in outputs if o.token_id is not None]
        if started is None and tokens:
            started = time.perf_counter()
    return tokens, time.perf_counter() - started, num_steps


class ForwardTimes:
    """Every forward of a model, timed and filed under its rows: (who, rows) -> seconds of each call."""

    def __init__(self):
        self.seconds: dict[tuple[str, int], list[float]] = {}

    def watch(self, model, who: str) -> None:
        forward = model.forward

        def timed(batch, kv):
            started = time.perf_counter()
            logits = forward(batch, kv)
            key = (who, int(batch.input_ids.shape[0]))
            self.seconds.setdefault(key, []).append(time.perf_counter() - started)
            return logits

        model.forward = timed

    def summary(self) -> str:
        """Median ms of each model's forwards by rows, the commonest first; a prefill's one call left out."""
        parts = []
        for (who, rows), seconds in sorted(self.seconds.items(), key=lambda item: -len(item[1])):
            if len(seconds) > 1:
                parts.append(
                    f"{who} {rows} row{'s' if rows > 1 else ''} {1e3 * sorted(seconds)[len(seconds) // 2]:.2f} ms"
                )
        return ", ".join(parts)


def measure(
    model_and_shape, prompt, params, k: int, args, draft=None
) -> tuple[list[int], float, dict, int, str]:
    """draft: the draft model's (model, shape), loaded once: drafting by it instead of n-grams."""
    method = ("draft_model" if draft is not None else "ngram") if k else "none"
    config = engine_config(
        model_path=args.model,
        kv_cache_tokens=8192,
        threads=args.threads,
        speculative_method=method,
        speculative_num_draft_tokens=max(k, 1),
        speculative_draft_model=args.draft_model or "",
    )
    if method == "draft_model":  # the engine would load the draft again: it gets the one loaded in main
        engine = Engine(dataclasses.replace(config, speculative_method="none"), model_and_shape)
        engine.speculator = DraftModelSpeculator(config, engine.shape, draft)
    else:
        engine = Engine(config, model_and_shape)
    run(engine, prompt[:8], SamplingFields(temperature=0, max_tokens=4))  # warm-up
    best, tokens, num_steps = float("inf"), None, 0
    for _ in range(args.repeats):
        tokens, seconds, num_steps = run(engine, prompt, params)
        best = min(best, seconds)
    times = ForwardTimes()  # one more run with every forward timed (the instance's forward, then undone)
    times.watch(engine.model, "served")
    if method == "draft_model":
        times.watch(engine.speculator.model, "draft")
    run(engine, prompt, params)
    del engine.model.forward
    if method == "draft_model":
        del engine.speculator.model.forward
    return tokens, (len(tokens) - 1) / best, engine.stats(), num_steps, times.summary()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--draft-tokens", type=int, nargs="+", default=[1, 2, 3, 4, 6])
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=list(TASKS))
    parser.add_argument("--model", default="smollm2", help="the served model (alias, GGUF file or folder)")
    parser.add_argument(
        "--draft-model", default=None, help="draft with this model (same tokenizer) instead of n-grams"
    )
    parser.add_argument(
        "--forwards", action="store_true", help="also the median time of each model's forwards, by rows"
    )
    args = parser.parse_args()

    tokenizer = load_text_tokenizer(args.model)
    edit = tokenizer.encode(
        tokenizer.apply_chat_template([{"role": "user", "content": EDIT}]), add_special_tokens=False
    )
    rng = random.Random(0)
    random_ids = [rng.randrange(100, 40000) for _ in range(len(edit))]
    model_and_shape = load_model(args.model, weight_dtype="auto")
    draft = load_model(args.draft_model, weight_dtype="auto") if args.draft_model else None
    print(f"served {args.model}, drafting by {args.draft_model or 'n-grams (prompt lookup)'}")
    print(
        f"{'task':<14} {'k':>3} {'tok/s':>8} {'accepted':>9} {'tok/verify':>11} {'tok/step':>9} {'vs off':>8}"
    )
    greedy = SamplingFields(temperature=0, max_tokens=args.max_tokens, ignore_eos=True)
    sampled = SamplingFields(temperature=1.0, seed=0, max_tokens=args.max_tokens, ignore_eos=True)
    prompts = {
        "edit": (edit, greedy),
        "random": (random_ids, greedy),
        "random-sampled": (random_ids, sampled),
    }
    for task in args.tasks:
        prompt, params = prompts[task]
        reference, off_rate, _, _, forwards = measure(model_and_shape, prompt, params, 0, args, draft)
        print(f"{task:<14} {'off':>3} {off_rate:8.1f} {'':>9} {'':>11} {1:9.2f} {1:8.3f}")
        if args.forwards:
            print(f"  forwards: {forwards}")
        if task == "edit":
            print(f"  output: {tokenizer.decode(reference)[:160]!r}...")
        for k in args.draft_tokens:
            tokens, rate, stats, num_steps, forwards = measure(
                model_and_shape, prompt, params, k, args, draft
            )
            if params.temperature == 0 and tokens != reference:
                raise RuntimeError(f"{task}, k={k}: greedy output differs with speculation")
            drafted = stats["num_spec_drafted_tokens"]
            accepted = stats["num_spec_accepted_tokens"] / drafted if drafted else 0.0
            per_verify = stats["num_spec_emitted_tokens"] / max(1, stats["num_spec_verifications"])
            per_step = (len(tokens) - 1) / max(1, num_steps)
            print(
                f"{task:<14} {k:3d} {rate:8.1f} {accepted:9.1%} {per_verify:11.2f} {per_step:9.2f} "
                f"{rate / off_rate:8.3f}"
            )
            if args.forwards:
                print(f"  forwards: {forwards}")


if __name__ == "__main__":
    main()
