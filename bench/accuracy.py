"""How closely each weight mode follows exact float32, teacher forced: on the default model, or on the tiny
random checkpoint of each model family.

    .venv/bin/python bench/accuracy.py [--modes auto int8 int4] [--tokens 32] [--one-at-a-time] [--isa avx512]
        [--model smol-q4_k_m.gguf]
        [--activations int16] [--kv-dtype float16]
    .venv/bin/python bench/accuracy.py --families [gemma3 qwen3 ...]   # every family when none is named

exact decodes greedily from the prompts (for the default model 16: English, code, numbers and random ids; for
a family, the ids of tests/roles/scheduler/models/test_family_parity.py, longer than any sliding window);
every other mode is fed exact's tokens and, at each position, its top token is compared with exact's (top-1
agreement), along with the largest logit difference. The prompt goes through the prefill path, every later
position through a decode step; --one-at-a-time decodes each prompt alone (a batch of one). A family's
checkpoint is the Hugging Face folder tests/family_checkpoints.py writes, made in a temporary directory.
--isa runs the kernels (auto) on one instruction-set path (exec.kernel_isa) instead of auto's; --activations
sets exec.activation_dtype, which acts on every quantised linear (prefill and decode alike); --kv-dtype sets
memory.kv_cache_dtype for every mode but exact's reference, which stays float32.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from roles.scheduler.kernels import native  # noqa: E402
from roles.scheduler.loading.from_file import load_model  # noqa: E402
from tests.family_checkpoints import FAMILY_CHECKPOINTS, write_family_checkpoint  # noqa: E402
from tests.paged_greedy import forced_decode_logits, greedy_decode_with_logits  # noqa: E402
from tests.roles.scheduler.models.test_auto_mode import PROMPTS  # noqa: E402
from tests.roles.scheduler.models.test_family_parity import PROMPTS as FAMILY_PROMPTS  # noqa: E402


def agreement(
    path: str,
    prompts: list[list[int]],
    modes: list[str],
    tokens: int,
    one_at_a_time: bool,
    kv_dtype: str = "float32",
) -> None:
    """Print one row per mode: its top-1 agreement with exact and its largest logit difference."""
    groups = [[prompt] for prompt in prompts] if one_at_a_time else [prompts]
    exact, shape = load_model(path, weight_dtype="exact")
    references = [greedy_decode_with_logits(exact, shape, group, tokens) for group in groups]
    print(f"{'mode':<6} {'top-1 agreement':>16} {'max |logit diff|':>17}")
    for mode in modes:
        model, _ = load_model(path, weight_dtype=mode)
        agree, total, largest = forced_agreement(model, shape, groups, references, kv_dtype)
        print(f"{mode:<6} {agree:>6} / {total:<4} {agree / total:6.1%} {largest:>12.3f}")


def forced_agreement(model, shape, groups, references, kv_dtype: str = "float32") -> tuple[int, int, float]:
    """model fed exact's greedy tokens (references: per group, its continuations and exact's logits): how many
    positions' top token is exact's, out of how many, and the largest logit difference."""
    agree = total = 0
    largest = 0.0
    for group, (continuations, exact_logits) in zip(groups, references, strict=True):
        logits = forced_decode_logits(model, shape, group, continuations, kv_dtype=kv_dtype)
        for ours, theirs in zip(logits, exact_logits, strict=True):
            agree += int((ours.argmax(-1) == theirs.argmax(-1)).sum())
            total += theirs.shape[0]
            largest = max(largest, float((ours - theirs).abs().max()))
    return agree, total, largest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", nargs="+", default=["auto", "int8", "int4"])
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--one-at-a-time", action="store_true")
    parser.add_argument("--model", default="smollm2", help="the default model, or a GGUF file's path")
    parser.add_argument("--families", nargs="*", choices=sorted(FAMILY_CHECKPOINTS), metavar="FAMILY")
    parser.add_argument("--isa", default="auto")
    parser.add_argument("--activations", default="float32", choices=native.ACTIVATION_DTYPES)
    parser.add_argument("--kv-dtype", default="float32", choices=("float32", "float16"))
    args = parser.parse_args()
    native.select_isa(args.isa)
    native.set_activation_dtype(args.activations)
    print(
        f"kernel path {native.selected_isa()}, activations {native.activation_dtype()}, KV cache {args.kv_dtype}"
    )
    if args.families is None:
        print(
            f"{args.model}: {len(PROMPTS)} prompts x {args.tokens} tokens, teacher forced on exact's greedy tokens"
        )
        agreement(args.model, PROMPTS, args.modes, args.tokens, args.one_at_a_time, args.kv_dtype)
        return
    with tempfile.TemporaryDirectory() as folder:
        for family in args.families or sorted(FAMILY_CHECKPOINTS):
            path = write_family_checkpoint(family, pathlib.Path(folder) / family)
            print(f"\n{family} (tiny random HF folder): {len(FAMILY_PROMPTS)} prompts x {args.tokens} tokens")
            agreement(str(path), FAMILY_PROMPTS, args.modes, args.tokens, args.one_at_a_time, args.kv_dtype)


if __name__ == "__main__":
    main()
