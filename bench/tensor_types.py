"""Every tensor type's linear on the CPU kernels: time per call and weights per nanosecond, at 1 row (a
decode step of one sequence) and at a batch of rows (a step of many sequences, a prefill chunk).

    .venv/bin/python bench/tensor_types.py [--rows 1 32] [--out 1536] [--threads 2] [--isa avx2 avx512]
        [--activations float32 int16 int8]

The weight is (--out, in) with in = 1536 (a whole number of 256-weight blocks), random valid blocks. The
best of 9 runs of 50 calls each, so a busy moment of a shared machine does not count. The reference line is
float32 F.linear (torch's own matmul) on the dequantised weight, at the same shape. One table per kernel
instruction-set path (--isa; default: every path this CPU has) and activation dtype (--activations:
exec.activation_dtype, which acts on quantised types: below 16 rows in int16 row kernels (int8: on avx2 the
packed int8 row kernels where the type packs), from 16 in int16 tiles, or int8 ones where the path takes the
type: every quantised type with AVX512_VNNI, on avx2 those whose codes fit 6 bits);
2 x weights/ns is GFLOP/s.
"""

from __future__ import annotations

import argparse
import itertools
import pathlib
import sys

import torch
import torch.nn.functional as F

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.decode_step import best_of  # noqa: E402
from roles.model_files.tensor_types import BY_NAME, SUPPORTED_NAMES  # noqa: E402
from roles.scheduler.kernels import native  # noqa: E402
from roles.scheduler.models.block_linear import BlockLinear  # noqa: E402
from tests.random_blocks import random_rows  # noqa: E402

IN_FEATURES = 1536


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1, 32])
    parser.add_argument("--out", type=int, default=1536)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument(
        "--isa", nargs="+", default=[p for p in native.isa_paths() if native.isa_available(p)]
    )
    parser.add_argument("--activations", nargs="+", default=["float32"], choices=native.ACTIVATION_DTYPES)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
        native.set_threads(args.threads)
    weights = args.out * IN_FEATURES
    print(f"linear ({args.out} x {IN_FEATURES}), {native.threads()} threads; per call (weights/ns)")
    print(f"{'type':<8}" + "".join(f" {'rows=' + str(r):>22}" for r in args.rows))
    reference = torch.randn(args.out, IN_FEATURES)
    line = f"{'torch f32':<8}"
    for rows in args.rows:
        x = torch.randn(rows, IN_FEATURES)
        seconds = best_of(lambda x=x: F.linear(x, reference), 50, 9)
        line += f" {seconds * 1e6:>10.1f} us ({weights * rows / seconds / 1e9:>6.1f})"
    print(line)
    linears = {
        name: BlockLinear(
            IN_FEATURES,
            [BY_NAME[name].type_id],
            [torch.from_numpy(random_rows(name, args.out, IN_FEATURES, seed=0))],
        )
        for name in SUPPORTED_NAMES
    }
    for isa, activations in itertools.product(args.isa, args.activations):
        native.select_isa(isa)
        native.set_activation_dtype(activations)
        print(f"kernel path {isa}, {activations} activations")
        for name, linear in linears.items():
            line = f"{name:<8}"
            for rows in args.rows:
                x = torch.randn(rows, IN_FEATURES)
                seconds = best_of(lambda x=x, linear=linear: linear(x), 50, 9)
                line += f" {seconds * 1e6:>10.1f} us ({weights * rows / seconds / 1e9:>6.1f})"
            print(line, flush=True)


if __name__ == "__main__":
    main()
