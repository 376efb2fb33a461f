"""OpenAI-compatible load generator: throughput, TTFT and inter-token latency against a running server,
and (with --start) the same workload on the in-process engine in the same run, for the serving overhead.

    .venv/bin/python bench/serving.py --start [--concurrency 1 8 32] [--output-len 128] [--prompt-len 32]
    .venv/bin/python bench/serving.py --url http://127.0.0.1:30000 --concurrency 8 --request-rate 4
    .venv/bin/python bench/serving.py --start --reference-url http://127.0.0.1:8080 --prompt-len 128

With --reference-url, every level runs against the reference server too (any OpenAI-compatible server,
e.g. llama.cpp's llama-server on the same GGUF), one server at a time, and a side-by-side table of
ratios is printed.

Prompts are random token ids (seeded) sent as `prompt: [ids]`, outputs run to --output-len with EOS
ignored, so every request does the same work. Only loopback servers; every loop is bounded by
--num-requests.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import pathlib
import random
import subprocess
import sys
import tempfile
import time

import httpx

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from launcher.port_check import free_tcp_ports  # noqa: E402


def make_prompts(count: int, length: int, seed: int) -> list[list[int]]:
    rng = random.Random(seed)
    return [[rng.randrange(100, 20000) for _ in range(length)] for _ in range(count)]


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q / 100 * len(ordered)))]


async def one_request(
    client: httpx.AsyncClient, url: str, model: str, prompt: list[int], output_len: int
) -> dict:
    body = {
        "model": model,
        "prompt": prompt,
        "max_tokens": output_len,
        "temperature": 0,
        "ignore_eos": True,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    try:
        return await _stream_one(client, url, body)
    except httpx.RemoteProtocolError:
        # A server may close an idle pooled connection just as it is reused; nothing was received
        # (_stream_one says otherwise), so sending the request again on a fresh connection is safe. Once.
        return await _stream_one(client, url, body)


async def _stream_one(client: httpx.AsyncClient, url: str, body: dict) -> dict:
    started = time.perf_counter()
    arrivals: list[float] = []
    tokens = 0
    try:
        async with client.stream("POST", url + "/v1/completions", json=body) as response:
            response.raise_for_status()
            async for line in response.aiter_lines():
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                chunk = json.loads(line[6:])
                if chunk.get("usage"):
                    tokens = chunk["usage"]["completion_tokens"]
                if chunk["choices"] and chunk["choices"][0]["text"]:
                    arrivals.append(time.perf_counter())
    except httpx.RemoteProtocolError:
        if arrivals:  # part of the answer came: not a stale connection, a failed request
            raise RuntimeError(f"{url} closed a stream mid-response") from None
        raise
    ended = time.perf_counter()
    tokens = tokens or len(arrivals)  # a server that sends no usage: one token per streamed chunk
    gaps = [b - a for a, b in zip(arrivals, arrivals[1:], strict=False)]
    return {
        "ttft": (arrivals[0] - started) if arrivals else float("nan"),
        "gaps": gaps,
        "tokens": tokens,
        "latency": ended - started,
    }


async def run_load(
    url: str,
    model: str,
    concurrency: int,
    num_requests: int,
    prompt_len: int,
    output_len: int,
    request_rate: float | None,
    seed: int,
) -> dict:
    # Fresh prompts per level: no server answers a level from a prefix cache warmed by the previous one.
    prompts = make_prompts(num_requests, prompt_len, seed * 1000 + concurrency)
    limits = httpx.Limits(max_connections=concurrency + 4)
    async with httpx.AsyncClient(timeout=httpx.Timeout(600), limits=limits) as client:
        await one_request(client, url, model, prompts[0][:8], 4)  # warm-up
        gate = asyncio.Semaphore(concurrency)
        rng = random.Random(seed)

        async def gated(prompt):
            async with gate:
                return await one_request(client, url, model, prompt, output_len)

        started = time.perf_counter()
        tasks = []
        for prompt in prompts:
            tasks.append(asyncio.create_task(gated(prompt)))
            if request_rate:
                await asyncio.sleep(rng.expovariate(request_rate))
        results = await asyncio.gather(*tasks)
        elapsed = time.perf_counter() - started
    gaps = [g for r in results for g in r["gaps"]]
    total = sum(r["tokens"] for r in results)
    return {
        "concurrency": concurrency,
        "requests": num_requests,
        "tokens": total,
        "seconds": elapsed,
        "tok_s": total / elapsed,
        "ttft_p50": percentile([r["ttft"] for r in results], 50),
        "ttft_p90": percentile([r["ttft"] for r in results], 90),
        "ttft_p99": percentile([r["ttft"] for r in results], 99),
        "itl_p50": percentile(gaps, 50),
        "itl_p90": percentile(gaps, 90),
        "itl_p99": percentile(gaps, 99),
    }


def engine_tok_s(
    concurrency: int, num_requests: int, prompt_len: int, output_len: int, seed: int, weight_dtype: str
) -> float:
    """The same requests on the in-process engine, `concurrency` at a time."""
    from roles.protocol import SamplingFields
    from roles.scheduler.engine.core import Engine
    from roles.scheduler.engine.settings import engine_config

    engine = Engine(
        engine_config(
            model_path="smollm2",
            weight_dtype=weight_dtype,
            max_running_requests=max(concurrency, 1),
            kv_cache_tokens=max(concurrency, 1) * (prompt_len + output_len + 32),
            enable_prefix_cache=True,
        )
    )
    params = SamplingFields(temperature=0, max_tokens=output_len, ignore_eos=True)
    prompts = make_prompts(num_requests, prompt_len, seed * 1000 + concurrency)
    engine.generate([prompts[0][:8]], SamplingFields(temperature=0, max_tokens=4, ignore_eos=True))
    started = time.perf_counter()
    for start in range(0, num_requests, concurrency):
        engine.generate(prompts[start : start + concurrency], params)
    return num_requests * output_len / (time.perf_counter() - started)


def start_server(
    port: int, weight_dtype: str, max_running: int, extra_yaml: str = "", exec_extra: str = ""
) -> subprocess.Popen:
    """`serve` on 127.0.0.1:port, returned once it is ready; extra_yaml: more top-level namespaces;
    exec_extra: more exec entries (flow style, e.g. "moe: {...}")."""
    config = pathlib.Path(tempfile.mkdtemp()) / "bench.yaml"
    exec_entries = f"weight_dtype: {weight_dtype}" + (f", {exec_extra}" if exec_extra else "")
    config.write_text(
        f"http: {{host: 127.0.0.1, port: {port}}}\nexec: {{{exec_entries}}}\n"
        f"schedule: {{max_running_requests: {max_running}}}\n{extra_yaml}"
    )
    serve = str(pathlib.Path(sys.executable).with_name("serve"))
    process = subprocess.Popen(
        [serve, "--config", str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    deadline = time.monotonic() + 300
    for line in process.stdout:
        if "roleserve ready on" in line:
            return process
        if time.monotonic() > deadline:
            break
    raise SystemExit(f"serve did not start (exit {process.poll()})")


def free_loopback_port() -> int:
    return free_tcp_ports("127.0.0.1", 1)[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=None)
    parser.add_argument(
        "--start", action="store_true", help="start `serve` with the default model on a free port"
    )
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument(
        "--requests-per-level", type=int, default=None, help="default: 2 x concurrency (min 4)"
    )
    parser.add_argument("--prompt-len", type=int, default=32)
    parser.add_argument("--output-len", type=int, default=128)
    parser.add_argument("--request-rate", type=float, default=None, help="Poisson arrivals per second")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--weight-dtype", default="auto")
    parser.add_argument("--reference-url", default=None, help="another server to run the same load against")
    parser.add_argument("--reference-name", default="reference")
    parser.add_argument("--skip-engine", action="store_true", help="do not run the in-process comparison")
    args = parser.parse_args()
    if not args.url and not args.start:
        parser.error("give --url of a running server or --start")

    server = None
    url = args.url
    if args.start:
        port = free_loopback_port()
        server = start_server(port, args.weight_dtype, max(args.concurrency))
        url = f"http://127.0.0.1:{port}"
    for target in (url, args.reference_url):
        if target and not target.startswith(("http://127.", "http://localhost", "http://[::1]")):
            raise SystemExit("bench/serving.py only targets loopback servers")
    rows, reference_rows = [], []
    try:
        for concurrency in args.concurrency:
            count = args.requests_per_level or max(4, 2 * concurrency)
            for target, results in ((url, rows), (args.reference_url, reference_rows)):
                if target is None:
                    continue
                results.append(
                    asyncio.run(
                        run_load(
                            target,
                            args.model,
                            concurrency,
                            count,
                            args.prompt_len,
                            args.output_len,
                            args.request_rate,
                            args.seed,
                        )
                    )
                )
                print(json.dumps({"url": target, **results[-1]}), flush=True)
    finally:
        if server is not None:
            server.terminate()
            server.wait(60)
    if not args.skip_engine and args.start:
        for row in rows:
            row["engine_tok_s"] = engine_tok_s(
                row["concurrency"],
                row["requests"],
                args.prompt_len,
                args.output_len,
                args.seed,
                args.weight_dtype,
            )
    print(
        f"\n{'conc':>4} {'reqs':>5} {'tok/s':>8} {'ttft p50/p90/p99 (ms)':>24} {'itl p50/p90/p99 (ms)':>22}"
        f" {'engine tok/s':>12} {'serve/engine':>12}"
    )
    for row in rows:
        ttft = "/".join(f"{row[k] * 1000:.0f}" for k in ("ttft_p50", "ttft_p90", "ttft_p99"))
        itl = "/".join(f"{row[k] * 1000:.1f}" for k in ("itl_p50", "itl_p90", "itl_p99"))
        engine = row.get("engine_tok_s")
        ratio = f"{row['tok_s'] / engine:.2f}x" if engine else "-"
        print(
            f"{row['concurrency']:>4} {row['requests']:>5} {row['tok_s']:>8.1f} {ttft:>24} {itl:>22}"
            f" {engine or 0:>12.1f} {ratio:>12}"
        )
    if reference_rows:
        print_side_by_side(rows, reference_rows, args.reference_name)


def print_side_by_side(rows: list[dict], reference_rows: list[dict], name: str) -> None:
    print(
        f"\n{'conc':>4} {'tok/s':>8} {name + ' tok/s':>16} {'ratio':>7}"
        f" {'ttft p50 (ms)':>14} {name + ' ttft':>14} {'ratio':>7}"
        f" {'itl p50 (ms)':>13} {name + ' itl':>13} {'ratio':>7}"
    )
    for ours, theirs in zip(rows, reference_rows, strict=True):
        print(
            f"{ours['concurrency']:>4} {ours['tok_s']:>8.1f} {theirs['tok_s']:>16.1f}"
            f" {ours['tok_s'] / theirs['tok_s']:>6.2f}x"
            f" {ours['ttft_p50'] * 1000:>14.0f} {theirs['ttft_p50'] * 1000:>14.0f}"
            f" {ours['ttft_p50'] / theirs['ttft_p50']:>6.2f}x"
            f" {ours['itl_p50'] * 1000:>13.1f} {theirs['itl_p50'] * 1000:>13.1f}"
            f" {ours['itl_p50'] / theirs['itl_p50']:>6.2f}x"
        )
    print("ratios: ours / reference (tok/s: higher is better; ttft and itl: lower is better)")


if __name__ == "__main__":
    main()
