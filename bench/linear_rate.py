"""The rate of a model's linears on roleserve's kernels at a number of rows (a 32-sequence decode step, a
256-token prefill chunk), against this CPU's measured peaks.

    .venv/bin/python bench/linear_rate.py [--model smollm2] [--rows 32 256] [--isa auto]
        [--activations int8]

One pass is every linear of the model once: each layer's Q|K|V, O, gate|up and down projections and the
output head (bench/decode_step.py's "linears alone"), at `rows` rows of random inputs, the best of 7 runs;
its GFLOP/s count 2 operations per weight and row. Beside them: torch's float32 matmul on the same threads
(`bench/roofline.py`) and the rate of the int8 multiply instruction alone (`bench/int8_peak.py`), the bound
no int8 tile can pass.
"""

from __future__ import annotations

import argparse
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from bench import int8_peak, roofline  # noqa: E402
from bench.decode_step import linears_alone, model_linears  # noqa: E402
from roles.scheduler.kernels import native  # noqa: E402
from roles.scheduler.loading.from_file import load_model  # noqa: E402
from runtime_context.settings import SETTINGS  # noqa: E402


def linear_params(model) -> int:
    return sum(m.in_features * m.out_features for m in model_linears(model))


def rates(model_path: str, rows: list[int], isa: str, activations: str, threads: int) -> dict[int, float]:
    """GFLOP/s of one pass over the model's linears at each number of rows, on path `isa` (auto: the one
    the server would take) with `activations` on `threads` threads."""
    model, _ = load_model(model_path, weight_dtype="auto")
    native.select_isa(isa)
    native.set_activation_dtype(activations)
    native.set_threads(threads)
    params = linear_params(model)
    with torch.inference_mode():
        return {n: 2 * params * n / linears_alone(model, n) / 1e9 for n in rows}


def int8_peaks(threads: int) -> dict[str, float]:
    """GOP/s of each int8 multiply instruction this CPU has, alone on `threads` threads (bench/int8_peak.py)."""
    return {name: int8_peak.peak_gop_s(name, threads) for name in int8_peak.available()}


def report(
    model_path: str,
    rows: list[int],
    isa: str,
    activations: str,
    threads: int,
    float32_peak: float,
    int8_rates: dict[str, float] | None = None,
) -> list[str]:
    """The lines bench/peers.py and main print: each rate, then the peaks it is held against (float32_peak:
    roofline.matmul_gflop_s on `threads`, which the caller has measured; int8_rates: int8_peaks, measured
    here unless the caller has)."""
    measured = rates(model_path, rows, isa, activations, threads)
    if int8_rates is None:
        int8_rates = int8_peaks(threads)
    lines = [
        f"roleserve's linears, one pass over the model's ({native.selected_isa()} path, {activations}"
        f" activations, {threads} threads): "
        + ", ".join(f"{measured[n]:.1f} GFLOP/s at {n} rows" for n in rows)
    ]
    peaks = [f"torch float32 matmul {float32_peak:.1f} GFLOP/s"]
    peaks += [f"{name} alone {rate:.1f} GOP/s" for name, rate in int8_rates.items()]
    lines.append(f"peaks on {threads} threads: " + "; ".join(peaks))
    if int8_rates:
        best = max(int8_rates.values())
        lines.append(
            "as a share of the int8 multiply's peak: "
            + ", ".join(f"{measured[n] / best:.0%} at {n} rows" for n in rows)
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--rows", type=int, nargs="+", default=[32, 256])
    parser.add_argument("--isa", default="auto", help="exec.kernel_isa")
    parser.add_argument(
        "--activations", default=SETTINGS["exec.activation_dtype"].default, help="exec.activation_dtype"
    )
    args = parser.parse_args()
    threads = native.threads()
    lines = report(
        args.model, args.rows, args.isa, args.activations, threads, roofline.matmul_gflop_s(threads)
    )
    for line in lines:
        print(line)


if __name__ == "__main__":
    main()
