"""What a token mask costs with each grammar engine that runs on CPU, on the bundled model's vocabulary.

For each schema, a valid instance is tokenized with the model's tokenizer and walked token by token: at
every step the engine computes the mask of allowed next tokens (timed), then accepts the token. Also
timed: turning the schema into the engine's compiled form (once per request). Engines not installed are
reported as such; roleserve depends on llguidance, the others are installed only to compare:

    .venv/bin/pip install outlines-core xgrammar   # xgrammar: --no-deps plus apache-tvm-ffi
    .venv/bin/python bench/grammar_engines.py [--repeats N]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import sys
import time

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from roles.tokenizer.text_tokenizer import load_text_tokenizer  # noqa: E402

SCHEMAS = {
    "flat": (
        {
            "type": "object",
            "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
            "required": ["name", "age"],
        },
        {"name": "Ada Lovelace", "age": 36},
    ),
    "nested": (
        {
            "type": "object",
            "properties": {
                "id": {"type": "integer"},
                "status": {"enum": ["active", "retired", "unknown"]},
                "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 4},
                "address": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}, "zip": {"type": "string"}},
                    "required": ["city", "zip"],
                },
                "scores": {"type": "array", "items": {"type": "number"}},
            },
            "required": ["id", "status", "tags", "address", "scores"],
        },
        {
            "id": 42,
            "status": "retired",
            "tags": ["math", "engines", "poetry"],
            "address": {"city": "London", "zip": "W1"},
            "scores": [3.5, 9.25, 1],
        },
    ),
}


def _byte_decoder() -> dict[str, int]:
    """The GPT-2 byte-level alphabet, inverted: vocabulary character -> byte."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    chars, extra = list(printable), 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            chars.append(256 + extra)
            extra += 1
    return {chr(c): b for b, c in zip(printable, chars, strict=True)}


def token_bytes(tokenizer) -> dict[bytes, list[int]]:
    decoder = _byte_decoder()
    table: dict[bytes, list[int]] = {}
    for text, index in tokenizer.get_vocab(with_added_tokens=False).items():
        if all(ch in decoder for ch in text):
            table.setdefault(bytes(decoder[ch] for ch in text), []).append(index)
    return table


class LLGuidance:
    name = "llguidance"

    def __init__(self, text_tokenizer):
        import llguidance

        self.lib = llguidance
        self.tokenizer = llguidance.LLTokenizer(
            text_tokenizer.tokenizer.to_str(), eos_token=sorted(text_tokenizer.eos_token_ids)
        )
        self.mask = torch.zeros((1, (text_tokenizer.vocab_size + 31) // 32), dtype=torch.int32)

    def compile(self, schema):
        grammar = self.lib.LLMatcher.grammar_from_json_schema(schema)
        return self.lib.LLMatcher(self.tokenizer, grammar)

    def fill_mask(self, matcher) -> None:
        matcher.unsafe_compute_mask_ptr(self.mask.data_ptr(), self.mask.numel() * 4)

    def accept(self, matcher, token: int) -> bool:
        return matcher.consume_token(token)


class OutlinesCore:
    name = "outlines-core"

    def __init__(self, text_tokenizer):
        import outlines_core
        from outlines_core.json_schema import build_regex_from_schema

        self.lib, self.to_regex = outlines_core, build_regex_from_schema
        eos = min(text_tokenizer.eos_token_ids)
        table = {key: ids for key, ids in token_bytes(text_tokenizer.tokenizer).items() if eos not in ids}
        self.vocabulary = outlines_core.Vocabulary(eos, table)
        self.mask = torch.zeros((1, (text_tokenizer.vocab_size + 31) // 32), dtype=torch.int32)

    def compile(self, schema):
        index = self.lib.Index(self.to_regex(json.dumps(schema)), self.vocabulary)
        return self.lib.Guide(index)

    def fill_mask(self, guide) -> None:
        guide.write_mask_into(self.mask.data_ptr(), self.mask.numel(), 4)

    def accept(self, guide, token: int) -> bool:
        guide.advance(token)
        return True


class XGrammar:
    name = "xgrammar"

    def __init__(self, text_tokenizer):
        import xgrammar

        self.lib = xgrammar
        vocab = text_tokenizer.tokenizer.get_vocab(with_added_tokens=True)
        encoded = [""] * text_tokenizer.vocab_size
        for text, index in vocab.items():
            encoded[index] = text
        info = xgrammar.TokenizerInfo(
            encoded,
            vocab_type=xgrammar.VocabType.BYTE_LEVEL,
            stop_token_ids=sorted(text_tokenizer.eos_token_ids),
        )
        self.compiler = xgrammar.GrammarCompiler(info, cache_enabled=False)
        self.mask = xgrammar.allocate_token_bitmask(1, text_tokenizer.vocab_size)

    def compile(self, schema):
        return self.lib.GrammarMatcher(self.compiler.compile_json_schema(json.dumps(schema)))

    def fill_mask(self, matcher) -> None:
        matcher.fill_next_token_bitmask(self.mask)

    def accept(self, matcher, token: int) -> bool:
        return matcher.accept_token(token)


def measure(engine, schema, token_ids: list[int], repeats: int) -> tuple[float, float]:
    """(median compile ms, median mask us per token) over the repeats."""
    compile_ms, mask_us = [], []
    for _ in range(repeats):
        started = time.perf_counter()
        state = engine.compile(schema)
        compile_ms.append((time.perf_counter() - started) * 1e3)
        spent = 0.0
        for token in token_ids:
            started = time.perf_counter()
            engine.fill_mask(state)
            spent += time.perf_counter() - started
            if not engine.accept(state, token):
                raise RuntimeError(f"{engine.name} refused token {token} of a valid instance")
        mask_us.append(spent / len(token_ids) * 1e6)
    return statistics.median(compile_ms), statistics.median(mask_us)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    text_tokenizer = load_text_tokenizer("smollm2")
    print(f"vocabulary: {text_tokenizer.vocab_size} tokens (bundled smollm2)")
    engines = []
    for engine_class in (LLGuidance, OutlinesCore, XGrammar):
        try:
            started = time.perf_counter()
            engines.append(engine_class(text_tokenizer))
            print(f"{engine_class.name}: tokenizer set-up {time.perf_counter() - started:.2f} s")
        except ImportError:
            print(f"{engine_class.name}: not installed")
    print(f"\n{'schema':8} {'engine':14} {'compile ms':>11} {'mask us/token':>14} {'vs llguidance':>14}")
    for schema_name, (schema, instance) in SCHEMAS.items():
        token_ids = text_tokenizer.encode(json.dumps(instance), add_special_tokens=False)
        reference = None
        for engine in engines:
            compile_ms, mask_us = measure(engine, schema, token_ids, args.repeats)
            reference = reference or mask_us
            print(
                f"{schema_name:8} {engine.name:14} {compile_ms:11.2f} {mask_us:14.1f} "
                f"{mask_us / reference:13.2f}x"
            )


if __name__ == "__main__":
    main()
