"""Any GGUF files, served by roleserve and by llama.cpp's llama-server one after the other in one run:
output tok/s at each concurrency, ready time and whole-server PSS, with ratios, and PSS against file size.

    .venv/bin/python bench/gguf_files.py --llama-server /path/to/llama-server smol-q4_k_m.gguf smol-q6_k.gguf
        [--concurrency 1 32] [--prompt-len 128] [--output-len 128] [--threads 2]

Each server serves one file at a time, alone on the machine, with the same slots and context: roleserve
with schedule.max_running_requests and memory.kv_cache_tokens, llama-server with -np and -c (its default
flash attention, continuous batching). The load is bench/serving.py's: random token-id prompts, outputs
run to --output-len with EOS ignored, streamed. PSS is read after the load (every process of the server).
Loopback only; every wait is bounded. llama-server is a reference for measuring, never a dependency.
"""

from __future__ import annotations

import argparse
import asyncio
import pathlib
import sys
from statistics import median

import psutil

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.reference_server import reference_server, tree_pss_mib  # noqa: E402
from bench.serving import run_load  # noqa: E402
from bench.startup import Server, free_port, ready_s  # noqa: E402


def run_levels(url: str, args) -> list[dict]:
    rows = []
    for concurrency in args.concurrency:
        count = max(4, 2 * concurrency)
        row = asyncio.run(
            run_load(url, "model", concurrency, count, args.prompt_len, args.output_len, None, args.seed)
        )
        rows.append(row)
        print(
            f"  c={concurrency}: {row['tok_s']:.1f} tok/s, ttft p50 {row['ttft_p50'] * 1000:.0f} ms",
            flush=True,
        )
    return rows


def slots_and_context(args) -> tuple[int, int]:
    slots = max(args.concurrency)
    return slots, max(2048, slots * (args.prompt_len + args.output_len + 16))


def earlier_starts(args) -> int:
    """Starts measured for ready before the one that serves the load (args.ready_starts, default 1 in all):
    the ready figure is the median of all of them, as one start on a shared machine can be far off."""
    return max(0, getattr(args, "ready_starts", 1) - 1)


def measure_roleserve(path: str, args) -> dict:
    slots, context = slots_and_context(args)
    config = {
        "model": {"path": path, "served_name": "model"},
        "schedule": {"max_running_requests": slots},
        "memory": {"kv_cache_tokens": context} | ({"kv_cache_dtype": args.kv_dtype} if args.kv_dtype else {}),
    }
    config["exec"] = (
        {"kernel_isa": args.kernel_isa}
        | ({"activation_dtype": args.activation_dtype} if args.activation_dtype else {})
        | ({"threads": args.threads} if args.threads else {})
    )
    readies = [ready_s(config) for _ in range(earlier_starts(args))]
    server = Server(config)
    try:
        readies.append(server.wait_ready())
        rows = run_levels(server.url, args)
        return {
            "ready_s": median(readies),
            "rows": rows,
            "pss_mib": server.pss_mib(),
            "kernels": server.kernels(),
        }
    finally:
        server.stop()


def measure_llama_server(path: str, args, binary: str | None = None, extra: tuple[str, ...] = ()) -> dict:
    """llama-server, or a server of its command line (ik_llama.cpp's: binary, with extra flags)."""
    slots, context = slots_and_context(args)
    port = free_port()
    threads = str(args.threads or len(psutil.Process().cpu_affinity()))
    argv = [binary or args.llama_server, "-m", path, "--host", "127.0.0.1", "--port", str(port)]
    argv += ["-t", threads, "-np", str(slots), "-c", str(context), "--alias", "model", *extra]
    readies = []
    for _ in range(earlier_starts(args)):
        with reference_server(argv, f"http://127.0.0.1:{port}") as (_, ready):
            readies.append(ready)
    with reference_server(argv, f"http://127.0.0.1:{port}") as (process, ready):
        readies.append(ready)
        rows = run_levels(f"http://127.0.0.1:{port}", args)
        return {"ready_s": median(readies), "rows": rows, "pss_mib": tree_pss_mib(process.pid)}


def print_table(results: list[tuple[str, int, dict, dict]], concurrency: list[int]) -> None:
    head = f"{'file':<22} {'MiB':>5}"
    for c in concurrency:
        head += f" {'c=' + str(c) + ' tok/s ours/llama':>24} {'ratio':>6}"
    head += f" {'ready s ours/llama':>19} {'PSS MiB ours/llama':>19} {'ratio':>6} {'PSS/file':>9}"
    print("\n" + head)
    for name, size, ours, theirs in results:
        line = f"{name:<22} {size / 2**20:>5.0f}"
        for a, b in zip(ours["rows"], theirs["rows"], strict=True):
            line += f" {a['tok_s']:>11.1f} / {b['tok_s']:>10.1f} {a['tok_s'] / b['tok_s']:>5.2f}x"
        line += f" {ours['ready_s']:>8.2f} / {theirs['ready_s']:>8.2f}"
        line += f" {ours['pss_mib']:>8.0f} / {theirs['pss_mib']:>8.0f} {ours['pss_mib'] / theirs['pss_mib']:>5.2f}x"
        line += f" {ours['pss_mib'] / (size / 2**20):>8.2f}x"
        print(line)
    print("ratios: roleserve / llama-server (tok/s: higher is better; PSS: lower is better)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", help="GGUF files")
    parser.add_argument("--llama-server", required=True, help="the llama-server binary")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 32])
    parser.add_argument("--prompt-len", type=int, default=128)
    parser.add_argument("--output-len", type=int, default=128)
    parser.add_argument(
        "--threads", type=int, default=0, help="compute threads of both (0: each its default)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--kernel-isa", default="auto", help="roleserve's exec.kernel_isa")
    parser.add_argument(
        "--activation-dtype", default=None, help="roleserve's exec.activation_dtype (default: its own)"
    )
    parser.add_argument(
        "--kv-dtype", default=None, help="roleserve's memory.kv_cache_dtype (default: its own)"
    )
    args = parser.parse_args()
    results = []
    for path in args.files:
        name = pathlib.Path(path).name
        print(f"{name}: roleserve", flush=True)
        ours = measure_roleserve(path, args)
        print(f"{name}: llama-server", flush=True)
        theirs = measure_llama_server(path, args)
        results.append((name, pathlib.Path(path).stat().st_size, ours, theirs))
    print_table(results, args.concurrency)


if __name__ == "__main__":
    main()
