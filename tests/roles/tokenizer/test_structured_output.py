"""Structured output requests become one checked grammar in the tokenizer: a bad schema, regex or grammar
is a 400 naming the field and the problem before anything reaches a scheduler."""

import pytest
from llguidance import LLMatcher

from roles.tokenizer.openai_errors import OpenAIError
from roles.tokenizer.schemas import ChatCompletionRequest, CompletionRequest
from roles.tokenizer.structured_output import request_grammar


def completion(**fields) -> CompletionRequest:
    return CompletionRequest(model="m", prompt="hi", **fields)


def refusal(body) -> OpenAIError:
    with pytest.raises(OpenAIError) as caught:
        request_grammar(body)
    assert caught.value.status == 400
    return caught.value


def test_no_constraint_and_text_format_give_no_grammar():
    assert request_grammar(completion()) is None
    assert request_grammar(completion(response_format={"type": "text"})) is None


def test_each_kind_of_constraint_compiles_to_an_llguidance_grammar():
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    bodies = [
        completion(response_format={"type": "json_object"}),
        ChatCompletionRequest(
            model="m",
            messages=[{"role": "user", "content": "hi"}],
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "x", "schema": schema, "strict": True},
            },
        ),
        completion(regex=r"[0-9]{3}"),
        completion(grammar='root ::= "yes" | "no"'),  # GBNF
        completion(grammar='start: "yes" | "no"'),  # Lark
    ]
    for body in bodies:
        assert LLMatcher.validate_grammar(request_grammar(body)) == ""  # "" is valid


@pytest.mark.parametrize(
    ("fields", "param", "problem"),
    [
        (
            {"response_format": {"type": "json_schema", "json_schema": {"schema": {"type": "strnig"}}}},
            "response_format.json_schema.schema",
            "strnig",
        ),
        (
            {
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"schema": {"type": "array", "minItems": 3, "maxItems": 1}},
                }
            },
            "response_format.json_schema.schema",
            "minItems",
        ),
        ({"response_format": {"type": "json_schema"}}, "response_format.json_schema", "needs a json_schema"),
        ({"regex": "(abc"}, "regex", "unclosed group"),
        ({"grammar": "root ::= missing"}, "grammar", "missing"),
        ({"regex": "a", "grammar": 'root ::= "a"'}, "grammar", "at most one"),
    ],
)
def test_a_bad_constraint_is_a_400_naming_the_field_and_the_problem(fields, param, problem):
    error = refusal(completion(**fields))
    assert error.param == param
    assert problem in error.message
