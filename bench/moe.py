"""The upcycled MoE: tokens/s at concurrency 1 and 16 with the expert distribution recorder off and `stat`
(goal: stat costs <= 3%), in process; the balancedness of a uniform-random and of a skewed prompt mix,
measured as if the experts were split over 2 expert-parallel ranks; then tokens/s at concurrency 1 and 16
through the real server with `parallel.ep_size` 1 and 2 (ratio 2 / 1), one server at a time; and, with
ep_size 2 and the expert_backup, a skewed mix before and after one rebalance (tok/s, measured balancedness,
the time to apply it).

    .venv/bin/python bench/moe.py [--folder .cache/smollm2-moe-4x2] [--experts 4] [--top-k 2] [--new 32]
                                  [--skip-ep] [--only-rebalance]

The folder is written on first use with `serve model upcycle --perturb 0.05` (perturbed experts, so the
seeded router's choices matter).
"""

from __future__ import annotations

import argparse
import asyncio
import pathlib
import random
import subprocess
import sys
import time

import torch

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.serving import free_loopback_port, one_request, run_load, start_server  # noqa: E402
from roles.protocol import SamplingFields  # noqa: E402
from roles.scheduler.engine.core import Engine  # noqa: E402
from roles.scheduler.engine.settings import engine_config  # noqa: E402
from roles.scheduler.expert_stats.balancedness import pass_balancedness  # noqa: E402
from roles.scheduler.expert_stats.recorder import NoopRecorder, make_recorder  # noqa: E402
from roles.scheduler.moe.placement import ExpertPlacement  # noqa: E402


def prompts(count: int, seed: int, skewed: bool) -> list[list[int]]:
    """Uniform: ids drawn from the whole vocabulary; skewed: every prompt repeats a few ids."""
    rng = random.Random(seed)
    if skewed:
        few = [rng.randrange(100, 20000) for _ in range(3)]
        return [[rng.choice(few) for _ in range(32)] for _ in range(count)]
    return [[rng.randrange(100, 20000) for _ in range(32)] for _ in range(count)]


def tok_s(engine: Engine, batch: list[list[int]], new: int) -> float:
    params = SamplingFields(temperature=0, max_tokens=new, ignore_eos=True)
    started = time.perf_counter()
    engine.generate(batch, params)
    return len(batch) * new / (time.perf_counter() - started)


def stat_hooks_ms(placement: ExpertPlacement, top_k: int, tokens: int = 16, passes: int = 500) -> float:
    """What the stat recorder adds to one forward pass, timed alone: begin, one route per layer, end."""
    recorder = make_recorder("stat", placement, 1000)
    recorder.start()
    ids = torch.randint(0, placement.num_physical, (tokens, top_k))
    started = time.perf_counter()
    for pass_id in range(passes):
        recorder.begin_pass(pass_id)
        for layer in range(placement.num_layers):
            recorder.on_route(layer, ids)
        recorder.end_pass()
    return (time.perf_counter() - started) / passes * 1e3


def serving_tok_s(folder: pathlib.Path, ep_size: int, concurrency: int, new: int, repeat: int) -> float:
    """Best of `repeat` loads of 2 x concurrency requests (32-token prompts) through `serve` with ep_size."""
    port = free_loopback_port()
    extra = (
        f"model: {{path: '{folder}', served_name: moe}}\nparallel: {{ep_size: {ep_size}}}\n"
        "memory: {kv_cache_tokens: 8192, page_size: 16}\n"
    )
    server = start_server(port, "exact", 16, extra)
    try:
        url = f"http://127.0.0.1:{port}"
        runs = [
            asyncio.run(run_load(url, "moe", concurrency, 2 * concurrency, 32, new, None, seed))["tok_s"]
            for seed in range(repeat)
        ]
    finally:
        server.terminate()
        server.wait(60)
    return max(runs)


async def skewed_load(url: str, concurrency: int, count: int, new: int, seed: int) -> float:
    """tok/s of `count` skewed prompts, `concurrency` at a time."""
    import httpx

    batch = prompts(count, seed, skewed=True)
    limits = httpx.Limits(max_connections=concurrency + 4)
    async with httpx.AsyncClient(timeout=httpx.Timeout(600), limits=limits) as client:
        gate = asyncio.Semaphore(concurrency)

        async def gated(prompt):
            async with gate:
                return await one_request(client, url, "moe", prompt, new)

        started = time.perf_counter()
        results = await asyncio.gather(*(gated(prompt) for prompt in batch))
    return sum(r["tokens"] for r in results) / (time.perf_counter() - started)


def window_balancedness(url: str) -> tuple[float, float]:
    """(sum, count) of the per-pass balancedness summary, summed over the ranks."""
    import httpx
    from prometheus_client.parser import text_string_to_metric_families

    text = httpx.get(url + "/metrics", timeout=30).text
    summary = next(f for f in text_string_to_metric_families(text) if f.name == "roleserve_eplb_balancedness")
    total = sum(s.value for s in summary.samples if s.name.endswith("_sum"))
    count = sum(s.value for s in summary.samples if s.name.endswith("_count"))
    return total, count


def rebalance_figures(folder: pathlib.Path, new: int) -> None:
    """ep_size 2 with the expert_backup: a skewed mix at concurrency 16 before and after one rebalance."""
    import httpx

    port = free_loopback_port()
    extra = (
        f"model: {{path: '{folder}', served_name: moe}}\nparallel: {{ep_size: 2}}\n"
        "memory: {kv_cache_tokens: 8192, page_size: 16}\nexpert_backup: {enabled: true}\n"
    )
    moe = (
        "moe: {num_redundant_experts: 2, eplb_min_rebalance_balancedness: 1.0, "
        "expert_balancedness_report_mode: prometheus}"
    )
    server = start_server(port, "exact", 16, extra, moe)
    url = f"http://127.0.0.1:{port}"
    try:
        figures = {}
        for phase in ("before", "after"):
            if phase == "after":
                reply = httpx.post(url + "/admin/eplb/rebalance", timeout=600).json()["replicas"]
            start = window_balancedness(url)
            tok_s_runs = [asyncio.run(skewed_load(url, 16, 32, new, 100 + r)) for r in range(2)]
            end = window_balancedness(url)
            figures[phase] = (max(tok_s_runs), (end[0] - start[0]) / max(1.0, end[1] - start[1]))
    finally:
        server.terminate()
        server.wait(60)
    print("rebalance, ep_size 2 + expert_backup, 4 experts + 2 redundant, skewed mix at concurrency 16:")
    for phase, (rate, balancedness) in figures.items():
        print(f"  {phase:>6}: {rate:6.1f} tok/s, measured balancedness {balancedness:.3f}")
    moved = sum(r["experts_moved"] for r in reply)
    seconds = max(r["seconds"] for r in reply)
    print(
        f"  the rebalance: expected balancedness {reply[0]['balancedness_before']:.3f} -> "
        f"{reply[0]['balancedness_after']:.3f}, {moved} experts moved, {seconds * 1e3:.0f} ms to apply"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--folder", default=str(ROOT / ".cache" / "smollm2-moe-4x2"))
    parser.add_argument("--experts", type=int, default=4)
    parser.add_argument("--top-k", type=int, default=2)
    parser.add_argument("--new", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=5, help="best of N per figure")
    parser.add_argument(
        "--skip-ep", action="store_true", help="do not measure ep_size 1 and 2 and a rebalance through serve"
    )
    parser.add_argument("--only-rebalance", action="store_true", help="measure only the rebalance")
    args = parser.parse_args()
    folder = pathlib.Path(args.folder)
    if not folder.is_dir():
        serve = pathlib.Path(sys.executable).with_name("serve")
        command = [str(serve), "model", "upcycle", "--experts", str(args.experts), "--top-k", str(args.top_k)]
        subprocess.run([*command, "--perturb", "0.05", "--out", str(folder)], check=True)
    if args.only_rebalance:
        rebalance_figures(folder, args.new)
        return
    engine = Engine(engine_config(model_path=str(folder), kv_cache_tokens=16 * 256, max_running_requests=16))
    shape = engine.shape
    placement = ExpertPlacement.contiguous(shape.num_layers, shape.num_experts, num_ranks=2)
    tok_s(engine, prompts(16, 0, skewed=False), 8)  # warm-up at the larger batch

    print(
        f"{folder.name}: {shape.num_experts} experts, top {shape.experts_per_token}, {shape.num_layers} layers"
    )
    print(f"{'concurrency':>11}  {'recorder off':>12}  {'recorder stat':>13}  {'stat cost':>9}")
    step_seconds: dict[int, float] = {}
    for concurrency in (1, 16):
        recorders = {"off": NoopRecorder(), "stat": make_recorder("stat", placement, 1000)}
        runs: dict[str, list[float]] = {"off": [], "stat": []}
        for r in range(args.repeat):  # interleaved, so drift on a shared machine hits both alike
            for mode, recorder in recorders.items():
                engine.attach_expert_stats(recorder, None)
                runs[mode].append(tok_s(engine, prompts(concurrency, 10 + r, False), args.new))
        figures = {mode: max(values) for mode, values in runs.items()}
        step_seconds[concurrency] = concurrency / figures["off"]
        cost = 1 - figures["stat"] / figures["off"]
        print(f"{concurrency:>11}  {figures['off']:>12.1f}  {figures['stat']:>13.1f}  {cost:>8.1%}")

    hooks_ms = stat_hooks_ms(placement, shape.experts_per_token)
    for concurrency, step_s in step_seconds.items():
        print(
            f"stat hooks alone: {hooks_ms:.2f} ms per pass = {hooks_ms / 1e3 / step_s:.2%} of a c={concurrency} step"
        )

    print("balancedness over 2 ranks (mean of passes):")
    for skewed in (False, True):
        recorder = make_recorder("stat", placement, 1000)
        engine.attach_expert_stats(recorder, None)
        recorder.start()
        tok_s(engine, prompts(16, 99, skewed), args.new)
        passes = recorder.kept_counts()
        values = [pass_balancedness(placement.rank_counts(counts)) for counts in passes]
        name = "skewed" if skewed else "uniform"
        print(f"  {name:>7}: {sum(values) / len(values):.4f} over {len(values)} passes")
    if args.skip_ep:
        return
    del engine  # the servers below need the cores and the memory to themselves

    print("through serve (exec.threads derived: 2 for ep_size 1, 1 per rank for ep_size 2):")
    print(f"{'concurrency':>11}  {'ep_size 1 tok/s':>15}  {'ep_size 2 tok/s':>15}  {'2 / 1':>6}")
    for concurrency in (1, 16):
        figures = {ep: serving_tok_s(folder, ep, concurrency, args.new, 3) for ep in (1, 2)}
        ratio = figures[2] / figures[1]
        print(f"{concurrency:>11}  {figures[1]:>15.1f}  {figures[2]:>15.1f}  {ratio:>5.2f}x")
    rebalance_figures(folder, args.new)


if __name__ == "__main__":
    main()
