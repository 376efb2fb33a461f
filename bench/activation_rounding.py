"""What rounding a linear's inputs to integers costs by itself, before any kernel: `exact` (float32 weights
dequantised from the file) with chosen linears' inputs rounded to BITS-bit integers, each group of GROUP inputs
with its own step, teacher forced as bench/accuracy.py is.

    .venv/bin/python bench/activation_rounding.py [--bits 8 16] [--groups 32 16] [--kinds all down_proj ...]
        [--keep 0 4 16] [--keep-from calibration rows] [--model smol-q4_k_m.gguf] [--tokens 32]

exact decodes the default model's 16 prompts greedily; then, for every bits x group x kinds, the same model is
fed exact's tokens while every linear of the named kinds (the last part of its module name: qkv_proj, o_proj,
gate_up_proj, down_proj; `head` for the vocabulary projection; `all` for every one; kinds joined by `+`
together) multiplies its inputs
rounded to nearest on a symmetric grid whose step is the group's largest magnitude / (2^(bits-1) - 1). 8 bits
in groups of 32 is exec.activation_dtype int8's rounding, 16 in groups of 32 int16's, whose offsets meet the
rounded inputs too. Printed: top-1 agreement with exact and the largest logit difference.

--keep K leaves K input channels of every chosen linear unrounded (zeroed before the groups are rounded, so
they set no group's step, and multiplied in float beside them): the K channels whose largest magnitude was
greatest while exact decoded CALIBRATION, prompts of their own (none of the 16 measured), the same number of
tokens. It measures what keeping a linear's outlier channels out of the int8 groups would give a kernel.
With --keep-from rows each input row keeps its own K channels of largest magnitude instead: no calibration,
and a row's rounding depends on that row alone.

A kernel's integer products add no error of their own (they are exact in int32), so its agreement should not
fall below the figure its scheme's rounding gives here: below it, the kernel loses more than its rounding.
"""

from __future__ import annotations

import argparse
import contextlib
import pathlib
import sys

import numpy as np
import torch
from torch import nn

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from bench.accuracy import forced_agreement  # noqa: E402
from roles.scheduler.loading.from_file import load_model  # noqa: E402
from roles.scheduler.models.quantized_linear import DenseLinear  # noqa: E402
from tests.paged_greedy import greedy_decode_with_logits  # noqa: E402
from tests.roles.scheduler.models.test_auto_mode import PROMPTS  # noqa: E402

HEAD = "head"
# The prompts --keep chooses each linear's channels on: random ids of seeds the measured prompts do not use.
CALIBRATION = [
    [int(t) for t in np.random.default_rng(1000 + seed).integers(100, 20000, 8)] for seed in range(8)
]


def round_inputs(x: torch.Tensor, bits: int, group: int) -> torch.Tensor:
    """x with each run of `group` values along its last dimension rounded to nearest on the symmetric grid of
    2^(bits-1) - 1 steps up to the run's largest magnitude (a run of zeros stays zero)."""
    if x.shape[-1] % group:
        raise ValueError(f"the last dimension ({x.shape[-1]}) is not a multiple of the group ({group})")
    runs = x.reshape(-1, group)
    step = runs.abs().amax(dim=-1, keepdim=True) / (2 ** (bits - 1) - 1)
    step = torch.where(step > 0, step, torch.ones_like(step))
    return (torch.round(runs / step) * step).reshape(x.shape)


def round_inputs_keeping(x: torch.Tensor, bits: int, group: int, kept: torch.Tensor) -> torch.Tensor:
    """round_inputs with the channels `kept` (indices into the last dimension) left as they are: they are
    zeroed before the rounding, so that no group's step comes from them, and put back after it."""
    if kept.numel() == 0:
        return round_inputs(x, bits, group)
    rest = x.clone()
    rest[..., kept] = 0.0
    rounded = round_inputs(rest, bits, group)
    rounded[..., kept] = x[..., kept]
    return rounded


def round_inputs_keeping_largest(x: torch.Tensor, bits: int, group: int, keep: int) -> torch.Tensor:
    """round_inputs_keeping with each row's own `keep` channels of largest magnitude left as they are."""
    rows = x.reshape(-1, x.shape[-1])
    kept = rows.abs().topk(keep, dim=-1).indices
    rounded = round_inputs(rows.scatter(1, kept, 0.0), bits, group)
    return rounded.scatter(1, kept, rows.gather(1, kept)).reshape(x.shape)


@contextlib.contextmanager
def transformed_inputs(model: nn.Module, kinds: set[str], transform):
    """Within the block, each linear of the chosen kinds multiplies transform(name, x) instead of its input x
    (HEAD: the vocabulary projection, which may be the tied embedding, not a module: its input instead)."""
    handles = [
        module.register_forward_pre_hook(
            lambda _module, args, name=name: (transform(name, args[0]), *args[1:])
        )
        for name, module in model.named_modules()
        if isinstance(module, DenseLinear) and name.rsplit(".", 1)[-1] in kinds
    ]
    if HEAD in kinds:
        projection = model.vocab_logits
        model.vocab_logits = lambda hidden: projection(transform(HEAD, hidden))
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()
        if HEAD in kinds:
            del model.vocab_logits


def channel_peaks(model: nn.Module, shape, kinds: set[str], prompts: list[list[int]], tokens: int) -> dict:
    """Per chosen linear (HEAD for the vocabulary projection), each input channel's largest magnitude while
    the model decodes prompts greedily for `tokens` tokens."""
    peaks: dict[str, torch.Tensor] = {}

    def record(name: str, x: torch.Tensor) -> torch.Tensor:
        top = x.reshape(-1, x.shape[-1]).abs().amax(dim=0)
        peaks[name] = top if name not in peaks else torch.maximum(peaks[name], top)
        return x

    with transformed_inputs(model, kinds, record):
        greedy_decode_with_logits(model, shape, prompts, tokens)
    return peaks


def linear_kinds(model: nn.Module) -> list[str]:
    """The kinds of linear a model has, as --kinds names them."""
    names = {
        name.rsplit(".", 1)[-1] for name, module in model.named_modules() if isinstance(module, DenseLinear)
    }
    return sorted(names - {"embedding", "lm_head"}) + [HEAD]


def rounded_inputs(model: nn.Module, kinds: set[str], bits: int, group: int, kept: dict | int | None = None):
    """Within the block, the chosen kinds of linear of model multiply rounded inputs, each but the channels
    `kept` names for it (by module name, HEAD for the vocabulary projection; none when absent), or, when kept
    is a number, each row but its own `kept` largest."""
    if isinstance(kept, int):
        return transformed_inputs(
            model, kinds, lambda _name, x: round_inputs_keeping_largest(x, bits, group, kept)
        )
    none = torch.zeros(0, dtype=torch.long)
    kept = kept or {}
    return transformed_inputs(
        model, kinds, lambda name, x: round_inputs_keeping(x, bits, group, kept.get(name, none))
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bits", type=int, nargs="+", default=[8, 16])
    parser.add_argument("--groups", type=int, nargs="+", default=[32, 16])
    parser.add_argument(
        "--kinds",
        nargs="+",
        default=["all"],
        help="kinds of linear, each run alone; a+b: those together; all: every one",
    )
    parser.add_argument(
        "--keep",
        type=int,
        nargs="+",
        default=[0],
        help="input channels of each chosen linear left unrounded, chosen on CALIBRATION",
    )
    parser.add_argument(
        "--keep-from",
        choices=["calibration", "rows"],
        default="calibration",
        help="calibration: a linear's K channels of largest peak on CALIBRATION; rows: each row's K largest",
    )
    parser.add_argument("--model", default="smollm2", help="the default model, or a GGUF file's path")
    parser.add_argument("--tokens", type=int, default=32)
    args = parser.parse_args()
    model, shape = load_model(args.model, weight_dtype="exact")
    kinds = linear_kinds(model)
    unknown = {kind for chosen in args.kinds for kind in chosen.split("+")} - {"all", *kinds}
    if unknown:
        parser.error(f"no linear of kind {sorted(unknown)} in this model; it has {kinds}")
    groups = [PROMPTS]
    references = [greedy_decode_with_logits(model, shape, group, args.tokens) for group in groups]
    print(
        f"{args.model}: {len(PROMPTS)} prompts x {args.tokens} tokens, teacher forced on exact's greedy tokens"
    )
    calibrated = any(args.keep) and args.keep_from == "calibration"
    peaks = channel_peaks(model, shape, set(kinds), CALIBRATION, args.tokens) if calibrated else {}
    print(
        f"{'bits':>4} {'group':>5} {'kept':>4} {'linears':<48} {'top-1 agreement':>16} {'max |logit diff|':>17}"
    )
    for bits in args.bits:
        for group in args.groups:
            for keep in args.keep:
                if args.keep_from == "rows":
                    kept = keep
                else:
                    kept = {name: top.topk(keep).indices for name, top in peaks.items()} if keep else {}
                for chosen in args.kinds:
                    selected = set(kinds) if chosen == "all" else set(chosen.split("+"))
                    with rounded_inputs(model, selected, bits, group, kept):
                        agree, total, largest = forced_agreement(model, shape, groups, references)
                    label = "all: " + ", ".join(kinds) if chosen == "all" else chosen
                    print(
                        f"{bits:>4} {group:>5} {keep:>4} {label:<48} {agree:>6} / {total:<4} {agree / total:6.1%}"
                        f" {largest:>12.3f}"
                    )


if __name__ == "__main__":
    main()
