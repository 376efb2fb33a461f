"""Where one decode step's time goes, per weight mode, on the default model (in process, no server).

    .venv/bin/python bench/decode_step.py [--batch 1 8 32] [--context 128] [--steps 40] [--isa avx512 avx512bf16]
        [--activations float32 int16] [--kv-dtype float32 float16]

For every batch size: the best of 7 runs of --steps identical decode steps over a --context-token
cache, for `exact` (float32, op by op) and `auto` (one-call decode step). Then the split of one step:
for exact, torch's profiler (top ops by self CPU time); for auto, the model's linears timed alone (each
layer's Q|K|V, O, gate|up and down at the batch's rows, plus the vocabulary projection) against the
whole step, the rest being attention, norms, RoPE, SiLU and synchronisation.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import pathlib
import sys
import time

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from roles.protocol import SamplingFields  # noqa: E402
from roles.scheduler.engine.core import Engine  # noqa: E402
from roles.scheduler.engine.settings import engine_config  # noqa: E402
from roles.scheduler.kernels import native  # noqa: E402
from roles.scheduler.loading.from_file import load_model  # noqa: E402
from roles.scheduler.sched.step_inputs import build_forward_batch  # noqa: E402


def best_of(function, steps: int, repeats: int = 7) -> float:
    function()
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        for _ in range(steps):
            function()
        best = min(best, (time.perf_counter() - started) / steps)
    return best


def decode_batch(
    model,
    shape,
    batch_size: int,
    context: int,
    kernel_isa: str = "auto",
    activations: str = "float32",
    kv_dtype: str = "float32",
):
    """An engine whose batch_size requests have about `context` tokens cached, and their next decode step.

    The prompts are prefilled a chunk a step, and a request whose prompt is in decodes one token every later
    step: each may generate as many tokens as there are prefill steps, and none may finish before the last
    prompt is in, or the step would have fewer than batch_size rows."""
    config = engine_config(
        kv_cache_tokens=batch_size * (context + 64),
        kernel_isa=kernel_isa,
        activation_dtype=activations,
        kv_cache_dtype=kv_dtype,
    )
    prefill_steps = -(-batch_size * context // config.chunked_prefill_size) + 1
    config = dataclasses.replace(config, kv_cache_tokens=batch_size * (context + prefill_steps + 64))
    engine = Engine(config, (model, shape))
    params = SamplingFields(temperature=0, max_tokens=prefill_steps + 32, ignore_eos=True)
    for i in range(batch_size):
        engine.add_request(f"r{i}", [(100 + 7 * i + j) % 20000 for j in range(context)], params)
    while any(r.num_computed_tokens < r.num_prompt_tokens for r in engine._requests.values()):
        engine.step()
    batch = build_forward_batch(engine.scheduler.schedule(), engine.config.page_size)
    if batch.input_ids.shape[0] != batch_size:
        raise RuntimeError(f"the decode step has {batch.input_ids.shape[0]} rows, not {batch_size}")
    return engine, batch


def time_steps(model, batch, kv_cache, steps: int) -> float:
    with torch.inference_mode():
        return best_of(lambda: model(batch, kv_cache), steps)


def model_linears(model) -> list:
    """Every linear a decode step multiplies by: each layer's four projections, then the output head."""
    modules = [
        m
        for layer in model.layers
        for m in (layer.qkv_proj, layer.o_proj, layer.gate_up_proj, layer.down_proj)
    ]
    modules.append(model.lm_head if model.lm_head is not None else model.embedding)
    return modules


def linears_alone(model, batch_size: int) -> float:
    """Seconds of one pass over model_linears at batch_size rows of random inputs (the best of 7)."""
    modules = model_linears(model)
    inputs = [torch.randn(batch_size, m.in_features) for m in modules]
    return best_of(lambda: [m(x) for m, x in zip(modules, inputs, strict=True)], steps=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--context", type=int, default=128)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--isa", nargs="+", default=["auto"], help="exec.kernel_isa values for auto")
    parser.add_argument(
        "--activations", nargs="+", default=["float32"], help="exec.activation_dtype values for auto"
    )
    parser.add_argument(
        "--kv-dtype", nargs="+", default=["float32"], help="memory.kv_cache_dtype values for auto"
    )
    args = parser.parse_args()
    models = {mode: load_model("smollm2", weight_dtype=mode) for mode in ("exact", "auto")}
    print(f"threads={native.threads()} context={args.context} tokens; ms per decode step (best of 7)")
    print(
        f"{'batch':>5} {'path':>10} {'acts':>7} {'kv':>7} {'exact':>8} {'auto':>8} {'speed-up':>9} {'auto: linears alone':>20}"
        f" {'auto: the rest':>15}"
    )
    for batch_size in args.batch:
        model, shape = models["exact"]
        engine, batch = decode_batch(model, shape, batch_size, args.context)
        exact = time_steps(model, batch, engine.kv_cache, args.steps)
        for isa, activations, kv_dtype in itertools.product(args.isa, args.activations, args.kv_dtype):
            model, shape = models["auto"]
            # The engine selects the path and the activations.
            engine, batch = decode_batch(model, shape, batch_size, args.context, isa, activations, kv_dtype)
            auto = time_steps(model, batch, engine.kv_cache, args.steps)
            linears = linears_alone(model, batch_size)
            print(
                f"{batch_size:>5} {isa:>10} {activations:>7} {kv_dtype:>7} {exact * 1e3:8.2f} {auto * 1e3:8.2f} {exact / auto:8.2f}x"
                f" {linears * 1e3:14.2f} ({linears / auto:4.0%}) {(auto - linears) * 1e3:9.2f}"
            )
    model, shape = models["exact"]
    engine, batch = decode_batch(model, shape, args.batch[0], args.context)
    with torch.inference_mode(), torch.profiler.profile() as profile:
        for _ in range(10):
            model(batch, engine.kv_cache)
    print(f"\nexact, batch {args.batch[0]}: top ops by self CPU time over 10 steps")
    print(profile.key_averages().table(sort_by="self_cpu_time_total", row_limit=12))


if __name__ == "__main__":
    main()
