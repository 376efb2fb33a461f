"""`serve model upcycle`: write a bundled Mixtral-format MoE folder from a dense GGUF, without downloads."""

from __future__ import annotations

import argparse
import sys

from runtime_context import EXIT_CONFIG_ERROR

UPCYCLE_HELP = """\
Sparse upcycling: every layer's MLP becomes --experts experts of a Mixtral-format Hugging Face folder
(config.json, model.safetensors in float32, tokenizer.json, tokenizer_config.json, generation_config.json);
attention, norms and embeddings are copied.

Seeded rules:
  expert E of layer L: w *= 1 + perturb * N(0, 1) for w1 (gate), w2 (down), w3 (up) in that order, drawn
    from torch.Generator().manual_seed((seed * 1024 + L) * 1024 + E); --perturb 0 (the default) makes exact
    copies, whose greedy output equals the dense model's whatever the router picks.
  router of layer L: N(0, 0.02) of shape [experts, hidden], drawn from torch.Generator().manual_seed(seed),
    layer 0 first.

Example: serve model upcycle --experts 8 --top-k 2 --out .cache/smollm2-moe-8x2
"""


def add_model_commands(commands: argparse._SubParsersAction) -> None:
    model = commands.add_parser("model", help="make model folders (upcycle: a bundled MoE)")
    actions = model.add_subparsers(dest="action", metavar="{upcycle}", required=True)
    upcycle = actions.add_parser(
        "upcycle",
        help="write a Mixtral-format MoE folder from the bundled dense model",
        description=UPCYCLE_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    upcycle.add_argument("--experts", type=int, required=True, help="experts per layer (>= 2)")
    upcycle.add_argument(
        "--top-k", type=int, required=True, help="experts each token is routed to (<= --experts)"
    )
    upcycle.add_argument("--out", required=True, help="the folder to write (new or empty)")
    upcycle.add_argument(
        "--model", default="smollm2", help="the dense Llama GGUF: 'smollm2' (default) or a path"
    )
    upcycle.add_argument(
        "--perturb", type=float, default=0.0, help="expert noise scale (0: exact copies); see the rules above"
    )
    upcycle.add_argument("--seed", type=int, default=0, help="seed of the router and the perturbation (>= 0)")


def run_model_command(args: argparse.Namespace) -> int:
    from roles.model_files.model_path import ModelFileError
    from roles.model_files.upcycle import UpcycleError, UpcycleSpec, upcycle

    spec = UpcycleSpec(experts=args.experts, top_k=args.top_k, perturb=args.perturb, seed=args.seed)
    try:
        out = upcycle(args.model, args.out, spec, progress=print)
    except (UpcycleError, ModelFileError) as error:
        print(f"serve model upcycle: {error}", file=sys.stderr)
        return EXIT_CONFIG_ERROR
    print(f"wrote {out}")
    return 0
