"""In-process throughput of our engine vs Hugging Face transformers ``generate`` on the default model.

Workloads (prompts of 28..36 random token ids, N new tokens with EOS ignored, greedy):
  single stream decode tok/s and time to first token; aggregate tok/s at 8 and 32 concurrent requests;
  prefill tok/s (32 prompts, one new token each).
transformers runs the same prompts fp32 as one static batch, left padded, do_sample=False.

    .venv/bin/python bench/engine.py [--weight-dtype exact|int8|int4] [--quick] [--skip-hf] [--repeat N]
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

from roles.model_files.model_path import resolve_model_path  # noqa: E402
from roles.protocol import SamplingFields  # noqa: E402
from roles.scheduler.engine.core import Engine  # noqa: E402
from roles.scheduler.engine.settings import engine_config  # noqa: E402

CONCURRENCIES = (8, 32)


def make_prompts(count: int, seed: int) -> list[list[int]]:
    rng = random.Random(seed)
    return [[rng.randrange(100, 20000) for _ in range(rng.randrange(28, 37))] for _ in range(count)]


def bench_ours(args, num_new: int) -> dict[str, float]:
    started = time.perf_counter()
    engine = Engine(
        engine_config(
            model_path="smollm2",
            weight_dtype=args.weight_dtype,
            threads=args.threads,
            max_running_requests=32,
            chunked_prefill_size=2048,
            kv_cache_tokens=32 * 256,
            enable_prefix_cache=False,  # random prompts share nothing; keep the comparison plain
        )
    )
    print(f"ours: loaded in {time.perf_counter() - started:.1f}s", flush=True)
    engine.generate(make_prompts(2, seed=99), SamplingFields(temperature=0, max_tokens=4, ignore_eos=True))
    runs = [measure_ours(engine, num_new) for _ in range(args.repeat)]
    print(f"ours: stats {engine.stats()}", flush=True)
    return best_of(runs)


def measure_ours(engine: Engine, num_new: int) -> dict[str, float]:
    params = SamplingFields(temperature=0, max_tokens=num_new, ignore_eos=True)
    results: dict[str, float] = {}
    engine.add_request(f"single-{time.monotonic()}", make_prompts(1, seed=1)[0], params)
    started = time.perf_counter()
    first_token_at = None
    while engine.has_unfinished():
        engine.step()
        if first_token_at is None:
            first_token_at = time.perf_counter()
    finished = time.perf_counter()
    results["ttft_ms"] = (first_token_at - started) * 1000
    results["single_tok_s"] = (num_new - 1) / (finished - first_token_at)

    for concurrency in CONCURRENCIES:
        prompts = make_prompts(concurrency, seed=concurrency)
        started = time.perf_counter()
        outputs = engine.generate(prompts, params)
        elapsed = time.perf_counter() - started
        results[f"aggregate{concurrency}_tok_s"] = sum(len(o) for o in outputs) / elapsed
        print(f"ours: {concurrency} concurrent done in {elapsed:.1f}s", flush=True)

    prompts = make_prompts(32, seed=7)
    started = time.perf_counter()
    engine.generate(prompts, SamplingFields(temperature=0, max_tokens=1, ignore_eos=True))
    results["prefill_tok_s"] = sum(len(p) for p in prompts) / (time.perf_counter() - started)
    return results


def bench_transformers(args, num_new: int) -> dict[str, float]:
    from transformers import AutoModelForCausalLM

    gguf_path = resolve_model_path("smollm2")
    started = time.perf_counter()
    model = AutoModelForCausalLM.from_pretrained(
        str(gguf_path.parent), gguf_file=gguf_path.name, dtype=torch.float32
    ).eval()
    print(f"transformers: loaded in {time.perf_counter() - started:.1f}s", flush=True)
    pad_id = 0

    def generate(prompts: list[list[int]], new_tokens: int) -> float:
        """Seconds for one static-batch, left-padded, greedy generate of exactly new_tokens tokens."""
        width = max(len(p) for p in prompts)
        input_ids = torch.tensor([[pad_id] * (width - len(p)) + p for p in prompts])
        attention_mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
        started = time.perf_counter()
        with torch.inference_mode():
            model.generate(
                input_ids=input_ids,
                attention_mask=attention_mask,
                do_sample=False,
                max_new_tokens=new_tokens,
                min_new_tokens=new_tokens,
                pad_token_id=pad_id,
            )
        return time.perf_counter() - started

    generate(make_prompts(2, seed=99), 4)
    return best_of([measure_transformers(generate, num_new) for _ in range(args.repeat)])


def measure_transformers(generate, num_new: int) -> dict[str, float]:
    results: dict[str, float] = {}
    prompt = make_prompts(1, seed=1)
    ttft = generate(prompt, 1)
    results["ttft_ms"] = ttft * 1000
    results["single_tok_s"] = (num_new - 1) / max(generate(prompt, num_new) - ttft, 1e-9)
    for concurrency in CONCURRENCIES:
        elapsed = generate(make_prompts(concurrency, seed=concurrency), num_new)
        results[f"aggregate{concurrency}_tok_s"] = concurrency * num_new / elapsed
        print(f"transformers: batch {concurrency} done in {elapsed:.1f}s", flush=True)
    prompts = make_prompts(32, seed=7)
    results["prefill_tok_s"] = sum(len(p) for p in prompts) / generate(prompts, 1)
    return results


def best_of(runs: list[dict[str, float]]) -> dict[str, float]:
    """The best figure of each metric over repeated runs (the machine is shared, so noise only slows)."""
    return {key: (min if key == "ttft_ms" else max)(run[key] for run in runs) for key in runs[0]}


ROWS = [
    ("single stream decode (tok/s)", "single_tok_s", True),
    ("aggregate, 8 concurrent (tok/s)", "aggregate8_tok_s", True),
    ("aggregate, 32 concurrent (tok/s)", "aggregate32_tok_s", True),
    ("prefill, 32 x ~32 tokens (tok/s)", "prefill_tok_s", True),
    ("time to first token (ms)", "ttft_ms", False),
]


def print_table(ours: dict[str, float], theirs: dict[str, float] | None, args, num_new: int) -> None:
    load = os.getloadavg()[0]
    print(f"\nweights={args.weight_dtype} threads={torch.get_num_threads()} new_tokens={num_new}", end="")
    print(f" repeat={args.repeat} load average now={load:.1f} (on {os.cpu_count()} cores)")
    header = f"{'workload':36} {'ours':>10}"
    if theirs:
        header += f" {'transformers':>13} {'ours/hf':>8}"
    print(header)
    for label, key, higher_is_better in ROWS:
        line = f"{label:36} {ours[key]:10.1f}"
        if theirs:
            ratio = ours[key] / theirs[key] if higher_is_better else theirs[key] / ours[key]
            line += f" {theirs[key]:13.1f} {ratio:7.2f}x"
        print(line)
    if theirs:
        print("(ours/hf > 1 means ours is better; for time to first token it is hf time / our time)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--weight-dtype", default="exact", help="exact | int8 | int4 (our model only)")
    parser.add_argument("--quick", action="store_true", help="32 new tokens instead of 128")
    parser.add_argument("--skip-hf", action="store_true", help="do not run transformers")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    parser.add_argument("--repeat", type=int, default=1, help="run each workload N times, report the best")
    args = parser.parse_args()
    num_new = 32 if args.quick else 128
    ours = bench_ours(args, num_new)
    theirs = None if args.skip_hf else bench_transformers(args, num_new)
    print_table(ours, theirs, args, num_new)


if __name__ == "__main__":
    main()
