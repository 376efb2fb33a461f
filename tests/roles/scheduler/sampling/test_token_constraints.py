"""Structured output through the whole engine step loop, on the tiny random Llama: whatever a random model
prefers, every finished output parses and matches its schema, regex or grammar, for many seeds at once."""

import json
import re

import jsonschema
import llguidance
import pytest

from roles.protocol import SamplingFields
from roles.scheduler.engine.core import Engine
from roles.scheduler.engine.settings import engine_config
from roles.tokenizer.structured_output import json_schema_grammar, regex_grammar, text_grammar
from roles.tokenizer.text_tokenizer import load_text_tokenizer
from tests.tiny_checkpoint import write_tiny_llama

SCHEMAS = {
    "nested object": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 12},
            "address": {
                "type": "object",
                "properties": {"city": {"type": "string", "maxLength": 10}, "zip": {"type": "integer"}},
                "required": ["city", "zip"],
                "additionalProperties": False,
            },
        },
        "required": ["name", "address"],
        "additionalProperties": False,
    },
    "enum": {
        "type": "object",
        "properties": {"status": {"enum": ["active", "retired", "unknown"]}, "ok": {"type": "boolean"}},
        "required": ["status", "ok"],
        "additionalProperties": False,
    },
    "bounded array": {
        "type": "array",
        "items": {"type": "integer", "minimum": 0, "maximum": 99},
        "minItems": 2,
        "maxItems": 4,
    },
    "array of objects": {
        "type": "object",
        "properties": {
            "tags": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"k": {"enum": ["a", "b"]}, "v": {"type": "number"}},
                    "required": ["k", "v"],
                    "additionalProperties": False,
                },
                "minItems": 1,
                "maxItems": 3,
            }
        },
        "required": ["tags"],
        "additionalProperties": False,
    },
}
SEEDS = range(12)


@pytest.fixture(scope="module")
def tiny_path(tmp_path_factory) -> str:
    return str(write_tiny_llama(tmp_path_factory.mktemp("tiny-llama")))


def run(engine: Engine, requests: dict[str, tuple[list[int], SamplingFields, str | None]]) -> dict:
    for request_id, (prompt, params, grammar) in requests.items():
        engine.add_request(request_id, prompt, params, grammar)
    tokens: dict[str, list[int]] = {request_id: [] for request_id in requests}
    reasons: dict[str, str] = {}
    for _ in range(10_000):
        if not engine.has_unfinished():
            break
        for output in engine.step():
            if output.token_id is not None:
                tokens[output.request_id].append(output.token_id)
            if output.is_finished:
                reasons[output.request_id] = output.finish_reason
    return {request_id: (tokens[request_id], reasons[request_id]) for request_id in requests}


def test_every_output_parses_and_matches_its_schema_over_many_seeds(tiny_path):
    tokenizer = load_text_tokenizer(tiny_path)
    engine = Engine(engine_config(model_path=tiny_path, kv_cache_tokens=16384, max_running_requests=64))
    prompt = tokenizer.encode("Hello world", add_special_tokens=False)
    requests = {
        f"{name}/{seed}": (
            prompt,
            SamplingFields(temperature=1.0, seed=seed, max_tokens=400),
            json_schema_grammar(schema, "schema"),
        )
        for name, schema in SCHEMAS.items()
        for seed in SEEDS
    }
    outputs = run(engine, requests)
    for request_id, (token_ids, reason) in outputs.items():
        schema = SCHEMAS[request_id.split("/")[0]]
        text = tokenizer.decode(token_ids)
        assert reason == "stop", f"{request_id} did not complete: {text!r}"
        jsonschema.validate(json.loads(text), schema)  # raises when it does not match


def test_regex_and_grammars_hold_while_free_rows_in_the_same_batch_run_as_before(tiny_path):
    tokenizer = load_text_tokenizer(tiny_path)
    prompt = tokenizer.encode("def add(a, b):", add_special_tokens=False)
    free = SamplingFields(temperature=0, max_tokens=20, ignore_eos=True)
    alone = run(
        Engine(engine_config(model_path=tiny_path, kv_cache_tokens=8192)), {"free": (prompt, free, None)}
    )
    gbnf = 'root ::= "yes" | "no" | "maybe " [0-9]'
    lark = 'start: item ("," item)*\nitem: /[a-c]{2}/'
    requests = {"free": (prompt, free, None)}
    for seed in SEEDS:
        sampling = SamplingFields(temperature=1.0, seed=seed, max_tokens=60)
        requests[f"regex/{seed}"] = (prompt, sampling, regex_grammar(r"[A-Z][a-z]{1,6}-[0-9]{3}"))
        requests[f"gbnf/{seed}"] = (prompt, sampling, text_grammar(gbnf))
        requests[f"lark/{seed}"] = (prompt, sampling, text_grammar(lark))
    outputs = run(
        Engine(engine_config(model_path=tiny_path, kv_cache_tokens=16384, max_running_requests=64)), requests
    )
    assert outputs["free"] == alone["free"]  # masks touch only their own rows
    patterns = {
        "regex": r"[A-Z][a-z]{1,6}-[0-9]{3}",
        "gbnf": r"yes|no|maybe [0-9]",
        "lark": r"[a-c]{2}(,[a-c]{2})*",
    }
    for request_id, (token_ids, reason) in outputs.items():
        kind = request_id.split("/")[0]
        if kind == "free":
            continue
        text = tokenizer.decode(token_ids)
        if kind == "lark":  # may go on until max_tokens; every prefix is still in the language
            assert re.fullmatch(patterns[kind], text.rstrip(",")), f"{request_id}: {text!r}"
            continue
        assert reason == "stop" and re.fullmatch(patterns[kind], text), f"{request_id}: {text!r} ({reason})"


def test_a_grammar_the_engine_refuses_ends_its_request_with_the_reason_and_spares_the_others(tiny_path):
    engine = Engine(engine_config(model_path=tiny_path, kv_cache_tokens=4096))
    broken = llguidance.LLMatcher.grammar_from_regex("(unclosed")
    engine.add_request("bad", [1, 2, 3], SamplingFields(max_tokens=4), broken)  # compiled off the step loop
    # Valid, but past the grammar engine's lexer limits once it works out the first mask.
    engine.add_request("huge", [1, 2, 3], SamplingFields(max_tokens=4), regex_grammar("(a{1000}){1000}"))
    engine.add_request("good", [1, 2, 3], SamplingFields(max_tokens=4), regex_grammar("[a-c]+"))
    outputs = []
    for _ in range(100):
        if not engine.has_unfinished():
            break
        outputs += engine.step()
    bad = [o for o in outputs if o.request_id == "bad"]
    assert len(bad) == 1 and bad[0].token_id is None and bad[0].finish_reason == "error"
    assert "unclosed group" in bad[0].error
    huge = [o for o in outputs if o.request_id == "huge"]
    assert len(huge) == 1 and huge[0].finish_reason == "error" and "too many expressions" in huge[0].error
    good = [o for o in outputs if o.request_id == "good"]
    assert good[-1].finish_reason in ("stop", "length") and all(o.token_id is not None for o in good)
