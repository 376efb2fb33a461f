"""What structured output costs per generated token: the bundled model decoding with a JSON schema against
the same decode without one, in one process (the engine the scheduler runs, default settings).

Each run adds B requests with the same chat prompt and decodes N tokens each (greedy, end-of-text ignored;
the schema asks for far more items than N tokens can hold, so both runs make exactly N tokens). Timed: the
steps after every request has its first token (the prefill is the same in both and left out). Repetitions
alternate between the two runs so load drift on a shared machine hits both alike; the best is kept.
Also printed: the grammar engine's one-time set-up and what compiling the schema costs per request.

    .venv/bin/python bench/structured_output.py [--tokens N] [--batch 1 8] [--repeats R] [--threads T]
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from roles.protocol import SamplingFields  # noqa: E402
from roles.scheduler.engine.core import Engine  # noqa: E402
from roles.scheduler.engine.settings import engine_config  # noqa: E402
from roles.tokenizer.structured_output import json_schema_grammar  # noqa: E402
from roles.tokenizer.text_tokenizer import load_text_tokenizer  # noqa: E402

SCHEMA = {
    "type": "object",
    "properties": {
        "people": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "maxLength": 24},
                    "age": {"type": "integer", "minimum": 0, "maximum": 120},
                    "role": {"enum": ["engineer", "artist", "doctor", "teacher", "farmer"]},
                    "tags": {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 3},
                },
                "required": ["name", "age", "role", "tags"],
                "additionalProperties": False,
            },
            "minItems": 200,
            "maxItems": 200,
        }
    },
    "required": ["people"],
    "additionalProperties": False,
}
PROMPT = "List many people with their name, age, role and tags as JSON."


def decode_seconds(engine: Engine, prompt: list[int], batch: int, tokens: int, grammar: str | None) -> float:
    """Seconds of the steps after every request's first token, for batch x (tokens - 1) tokens."""
    params = SamplingFields(temperature=0, max_tokens=tokens, ignore_eos=True)
    ids = [f"r{time.monotonic_ns()}-{i}" for i in range(batch)]
    for request_id in ids:
        engine.add_request(request_id, prompt, params, grammar)
    counts = dict.fromkeys(ids, 0)
    started = None
    for _ in range(100 * tokens):
        if not engine.has_unfinished():
            break
        for output in engine.step():
            if output.token_id is not None:
                counts[output.request_id] += 1
        if started is None and all(counts.values()):
            started = time.perf_counter()
    if sorted(counts.values()) != [tokens] * batch:
        raise RuntimeError(f"expected {tokens} tokens per request, got {sorted(counts.values())}")
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    tokenizer = load_text_tokenizer("smollm2")
    prompt = tokenizer.encode(
        tokenizer.apply_chat_template([{"role": "user", "content": PROMPT}]), add_special_tokens=False
    )
    engine = Engine(engine_config(model_path="smollm2", kv_cache_tokens=32768, threads=args.threads))
    grammar = json_schema_grammar(SCHEMA, "schema")
    started = time.perf_counter()
    engine.constraints.matcher(grammar)
    print(
        f"grammar engine set-up (once per scheduler, at the first constrained request): "
        f"{time.perf_counter() - started:.2f} s"
    )
    started = time.perf_counter()
    for _ in range(20):
        engine.constraints.matcher(grammar)
    print(f"schema compile per request: {(time.perf_counter() - started) / 20 * 1e3:.2f} ms")
    decode_seconds(engine, prompt, 1, 4, grammar)  # warm-up of both paths
    decode_seconds(engine, prompt, 1, 4, None)

    print(f"\n{'batch':>5} {'free ms/token':>14} {'schema ms/token':>16} {'cost':>8}")
    for batch in args.batch:
        best = {"free": float("inf"), "schema": float("inf")}
        for _ in range(args.repeats):
            for name, constraint in (("free", None), ("schema", grammar)):
                seconds = decode_seconds(engine, prompt, batch, args.tokens, constraint)
                best[name] = min(best[name], seconds / (batch * (args.tokens - 1)))
        cost = best["schema"] / best["free"] - 1
        print(f"{batch:5d} {best['free'] * 1e3:14.3f} {best['schema'] * 1e3:16.3f} {cost:+8.1%}")


if __name__ == "__main__":
    main()
