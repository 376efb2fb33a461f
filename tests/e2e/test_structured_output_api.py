"""Structured output through a real `serve` (tiny random model) and the official openai client: json_schema
and json_object on chat, regex and grammar on completions, streamed or not, n > 1; bad ones are 400s."""

from __future__ import annotations

import json

import jsonschema
import openai
import pytest
from serve_harness import ServeProcess

from conftest import tiny_config

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 16},
        "role": {"enum": ["admin", "user", "guest"]},
        "scores": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 9}, "maxItems": 3},
    },
    "required": ["name", "role", "scores"],
    "additionalProperties": False,
}
MESSAGES = [{"role": "user", "content": "Describe a user as JSON."}]


@pytest.fixture(scope="module")
def server(tiny_model, tmp_path_factory):
    with ServeProcess(tmp_path_factory.mktemp("structured"), tiny_config(tiny_model)) as running:
        yield running


@pytest.fixture(scope="module")
def client(server):
    return server.openai_client()


def test_json_schema_chat_output_parses_and_matches_for_every_choice(client):
    response = client.chat.completions.create(
        model="tiny",
        messages=MESSAGES,
        max_tokens=300,
        n=6,
        seed=11,
        response_format={
            "type": "json_schema",
            "json_schema": {"name": "person", "schema": PERSON, "strict": True},
        },
    )
    assert len(response.choices) == 6
    for choice in response.choices:
        assert choice.finish_reason == "stop", choice.message.content
        jsonschema.validate(json.loads(choice.message.content), PERSON)


def test_json_object_streams_deltas_that_join_into_one_object(client):
    stream = client.chat.completions.create(
        model="tiny",
        messages=MESSAGES,
        max_tokens=400,
        seed=3,
        stream=True,
        response_format={"type": "json_object"},
        extra_body={"frequency_penalty": 0.5},
    )
    pieces, reasons = [], []
    for chunk in stream:
        for choice in chunk.choices:
            pieces.append(choice.delta.content or "")
            reasons.append(choice.finish_reason)
    text = "".join(pieces)
    if reasons[-1] == "stop":
        assert isinstance(json.loads(text), dict)
    else:  # an unbounded object may run out of tokens; what came is still the start of one
        assert reasons[-1] == "length" and text.startswith("{")
    assert len([p for p in pieces if p]) > 1


def test_regex_and_grammar_extension_fields_on_completions(client):
    regex = client.completions.create(
        model="tiny", prompt="Phone:", max_tokens=30, n=4, seed=5, extra_body={"regex": "[0-9]{3}-[0-9]{4}"}
    )
    for choice in regex.choices:
        assert choice.finish_reason == "stop"
        assert len(choice.text) == 8 and choice.text[3] == "-" and choice.text.replace("-", "").isdigit()
    grammar = client.completions.create(
        model="tiny",
        prompt="Answer:",
        max_tokens=10,
        n=4,
        seed=1,
        extra_body={"grammar": 'root ::= "yes" | "no"'},
    )
    assert {choice.text for choice in grammar.choices} <= {"yes", "no"}


@pytest.mark.parametrize(
    ("extra", "param"),
    [
        (
            {
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": "x", "schema": {"type": "nope"}},
                }
            },
            "response_format.json_schema.schema",
        ),
        ({"regex": "[0-9"}, "regex"),
        ({"grammar": "root ::= undefined_rule"}, "grammar"),
    ],
)
def test_an_invalid_constraint_is_a_400_in_openai_shape(client, extra, param):
    with pytest.raises(openai.BadRequestError) as caught:
        client.completions.create(model="tiny", prompt="x", max_tokens=5, extra_body=extra)
    error = caught.value.body
    assert error["param"] == param and error["type"] == "invalid_request_error"
    assert param.split(".")[0] in error["message"]


def test_a_grammar_only_the_models_vocabulary_rules_out_is_a_400_from_the_scheduler(client):
    # Token 999999 cannot be checked without the vocabulary: the scheduler's grammar engine refuses it.
    with pytest.raises(openai.BadRequestError) as caught:
        client.completions.create(
            model="tiny", prompt="x", max_tokens=5, extra_body={"grammar": "start: <[999999]>"}
        )
    assert "grammar" in caught.value.body["message"] and "999999" in caught.value.body["message"]
    again = client.completions.create(model="tiny", prompt="x", max_tokens=3, extra_body={"regex": "[ab]+"})
    assert set(again.choices[0].text) <= {"a", "b"}  # the scheduler serves on
