"""How closely each weight mode follows exact float32 on the default model, teacher forced.

    .venv/bin/python bench/accuracy.py [--modes auto int8 int4] [--tokens 32] [--one-at-a-time] [--isa avx512]

exact decodes greedily from 16 prompts (English, code, numbers and random ids); every other mode is
fed exact's tokens and, at each position, its top token is compared with exact's (top-1 agreement),
along with the largest logit difference. The prompt goes through the prefill path, every later
position through a decode step; --one-at-a-time decodes each prompt alone (a batch of one). --isa runs the
kernels (auto) on one instruction-set path instead of the widest this CPU has.
"""

from __future__ import annotations

import argparse
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from roles.scheduler.kernels import native  # noqa: E402
from roles.scheduler.loading.from_file import load_model  # noqa: E402
from tests.paged_greedy import forced_decode_logits, greedy_decode_with_logits  # noqa: E402
from tests.roles.scheduler.models.test_auto_mode import PROMPTS  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", nargs="+", default=["auto", "int8", "int4"])
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--one-at-a-time", action="store_true")
    parser.add_argument("--isa", default="auto")
    args = parser.parse_args()
    native.select_isa(args.isa)
    groups = [[prompt] for prompt in PROMPTS] if args.one_at_a_time else [PROMPTS]
    exact, shape = load_model("smollm2", weight_dtype="exact")
    references = [greedy_decode_with_logits(exact, shape, group, args.tokens) for group in groups]
    print(f"{len(PROMPTS)} prompts x {args.tokens} tokens, teacher forced on exact's greedy tokens")
    print(f"kernel path {native.selected_isa()}")
    print(f"{'mode':<6} {'top-1 agreement':>16} {'max |logit diff|':>17}")
    for mode in args.modes:
        model, _ = load_model("smollm2", weight_dtype=mode)
        agree = total = 0
        largest = 0.0
        for group, (continuations, exact_logits) in zip(groups, references, strict=True):
            logits = forced_decode_logits(model, shape, group, continuations)
            for ours, theirs in zip(logits, exact_logits, strict=True):
                agree += int((ours.argmax(-1) == theirs.argmax(-1)).sum())
                total += theirs.shape[0]
                largest = max(largest, float((ours - theirs).abs().max()))
        print(f"{mode:<6} {agree:>6} / {total:<4} {agree / total:6.1%} {largest:>12.3f}")


if __name__ == "__main__":
    main()
