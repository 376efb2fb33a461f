"""KV cache memory of a Gemma 3-like model at a long context, with windowed layers keeping every position
(as before attention groups) and keeping only their window (now).

The shape: 6 layers, 5 local with a window of 512 and 1 global, one KV head of 256 (Gemma 3 270M's attention),
float32 K and V. One sequence of 8192 tokens (a prompt of 8160, then 32 decode steps) runs through the real engine, scheduler,
step inputs and KV pools; the model step writes K and V into every layer at the slots the engine gives it
(what is resident does not depend on what the layers compute, and the tests check the tokens of real models).
"Before" is the same shape with no windows: what every layer kept when windows only masked.

Printed per layout: the KV pages the sequence holds at its last decode step, their bytes, and the resident bytes of
the pools (the cache is anonymous memory, resident only where written; from /proc/self/smaps).

    .venv/bin/python bench/kv_memory.py [--tokens 8192] [--window 512] [--max-running 1]
"""

from __future__ import annotations

import argparse
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from roles.model_files.model_shape import ModelShape  # noqa: E402
from roles.protocol import SamplingFields  # noqa: E402
from roles.scheduler.engine.core import Engine  # noqa: E402
from roles.scheduler.engine.settings import engine_config  # noqa: E402

VOCAB = 256
PAGE = 16


def gemma3_like(window: int) -> ModelShape:
    return ModelShape(
        architecture="gemma3",
        vocab_size=VOCAB,
        hidden_size=640,
        intermediate_size=2048,
        num_layers=6,
        num_heads=4,
        num_kv_heads=1,
        head_dim=256,
        rms_norm_eps=1e-6,
        rope_theta=1_000_000.0,
        context_length=32768,
        tie_word_embeddings=True,
        layer_windows=(window,) * 5 + (0,) if window else (),
    )


class KVWriter:
    """A model step that only writes this step's K and V into every layer's pool, and records the pages
    each pool's block table holds at each step (the last step's stay)."""

    def __init__(self, shape: ModelShape):
        self.shape = shape
        self.eos_token_ids: list[int] = []
        self.held_pages: list[int] = []

    def forward(self, batch, kv) -> torch.Tensor:
        tokens = batch.input_ids.shape[0]
        new = torch.ones(tokens, self.shape.num_kv_heads, self.shape.head_dim)
        self.held_pages = []
        for group, pool in enumerate(kv.pools):
            tables, slots = batch.paging(group)
            self.held_pages.append(int((tables[0] != 0).sum()))
            for layer in pool.layers:
                pool.write(layer, slots, new, new)
        return torch.zeros(len(batch.query_lens), VOCAB)


def resident_bytes(address: int) -> int:
    """Rss of the mapping holding ``address`` (/proc/self/smaps)."""
    lines = pathlib.Path("/proc/self/smaps").read_text().splitlines()
    inside = False
    for line in lines:
        head = line.split()[0]
        if "-" in head and all(c in "0123456789abcdef-" for c in head):
            start, end = (int(x, 16) for x in head.split("-"))
            inside = start <= address < end
        elif inside and line.startswith("Rss:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no mapping holds {address:#x}")


def measure(window: int, tokens: int, max_running: int) -> dict:
    shape = gemma3_like(window)
    model = KVWriter(shape)
    config = engine_config(
        max_running_requests=max_running,
        chunked_prefill_size=512,
        kv_cache_tokens=tokens * max_running,
        page_size=PAGE,
    )
    engine = Engine(config, (model, shape))
    # Prefilled in chunks of 512, then 32 decode steps: the last one reads a context of ``tokens``.
    greedy = SamplingFields(temperature=0, max_tokens=33, ignore_eos=True)
    engine.add_request("long", [1] * (tokens - 32), greedy)
    while engine.has_unfinished():
        engine.step()
    groups = []
    for group, pages in zip(engine.kv_groups, model.held_pages, strict=True):
        groups.append(
            dict(
                window=group.window,
                layers=len(group.layers),
                pool_pages=group.cache.allocator.num_usable_pages,
                held_pages=pages,
                held_bytes=pages * group.kv.bytes_per_page,
                resident=resident_bytes(group.kv.storage.ctypes.data),
            )
        )
    return dict(
        groups=groups, held=sum(g["held_bytes"] for g in groups), resident=sum(g["resident"] for g in groups)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=8192)
    parser.add_argument("--window", type=int, default=512)
    parser.add_argument("--max-running", type=int, default=1, help="schedule.max_running_requests")
    args = parser.parse_args()
    mib = 2**20
    print(
        f"Gemma 3-like: 6 layers (5 x window {args.window}, 1 global), 1 KV head x 256, float32, "
        f"page {PAGE}, one sequence of {args.tokens} tokens, max_running_requests {args.max_running}"
    )
    results = {}
    for name, window in (
        ("before: every layer keeps every position", 0),
        ("now: windowed layers keep their window", args.window),
    ):
        result = measure(window, args.tokens, args.max_running)
        results[name] = result
        print(f"\n{name}")
        for g in result["groups"]:
            print(
                f"  group window {g['window'] or 'full':>4}  {g['layers']} layers  pool {g['pool_pages']:5d} pages  "
                f"held {g['held_pages']:5d} pages = {g['held_bytes'] / mib:7.1f} MiB  resident {g['resident'] / mib:7.1f} MiB"
            )
        print(
            f"  KV held by the sequence {result['held'] / mib:7.1f} MiB, resident {result['resident'] / mib:7.1f} MiB"
        )
    before, now = results.values()
    print(
        f"\nheld per sequence: {before['held'] / mib:.1f} -> {now['held'] / mib:.1f} MiB "
        f"({before['held'] / now['held']:.2f}x less); resident: {before['resident'] / mib:.1f} -> "
        f"{now['resident'] / mib:.1f} MiB ({before['resident'] / now['resident']:.2f}x less)"
    )


if __name__ == "__main__":
    main()
