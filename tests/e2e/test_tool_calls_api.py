"""Tool calls through a real `serve` (tiny random model) and the official openai client: a required or named
call always parses against its function's schema, streamed or not; auto reads call blocks out of the
answer; a conversation with earlier calls and their results is accepted."""

from __future__ import annotations

import json

import jsonschema
import openai
import pytest
from serve_harness import ServeProcess

from conftest import tiny_config

WEATHER_PARAMETERS = {
    "type": "object",
    "properties": {"city": {"type": "string", "maxLength": 12}, "unit": {"enum": ["celsius", "fahrenheit"]}},
    "required": ["city", "unit"],
    "additionalProperties": False,
}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather in a city",
            "parameters": WEATHER_PARAMETERS,
        },
    },
    {
        "type": "function",
        "function": {
            "name": "add",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
                "additionalProperties": False,
            },
        },
    },
]
SCHEMAS = {tool["function"]["name"]: tool["function"]["parameters"] for tool in TOOLS}
MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]


@pytest.fixture(scope="module")
def server(tiny_model, tmp_path_factory):
    with ServeProcess(tmp_path_factory.mktemp("tools"), tiny_config(tiny_model)) as running:
        yield running


@pytest.fixture(scope="module")
def client(server):
    return server.openai_client()


def check_call(call) -> None:
    assert call.type == "function" and call.id.startswith("call_")
    jsonschema.validate(json.loads(call.function.arguments), SCHEMAS[call.function.name])


def test_a_required_call_parses_against_its_function_schema_for_every_seed(client):
    response = client.chat.completions.create(
        model="tiny",
        messages=MESSAGES,
        tools=TOOLS,
        tool_choice="required",
        parallel_tool_calls=False,
        n=6,
        seed=7,
        max_tokens=200,
    )
    for choice in response.choices:
        assert choice.finish_reason == "tool_calls", choice.message
        assert len(choice.message.tool_calls) == 1
        check_call(choice.message.tool_calls[0])


def test_a_named_function_is_the_one_called_and_streams_as_tool_call_deltas(client):
    stream = client.chat.completions.create(
        model="tiny",
        messages=MESSAGES,
        tools=TOOLS,
        tool_choice={"type": "function", "function": {"name": "add"}},
        parallel_tool_calls=False,
        seed=2,
        max_tokens=200,
        stream=True,
        logprobs=True,
        stream_options={"include_usage": True},
    )
    calls: dict[int, dict] = {}
    reasons, contents, logprobs, usage = [], [], [], None
    for chunk in stream:
        usage = chunk.usage or usage
        for choice in chunk.choices:
            reasons.append(choice.finish_reason)
            contents.append(choice.delta.content)
            logprobs += choice.logprobs.content if choice.logprobs else []
            for delta in choice.delta.tool_calls or []:
                entry = calls.setdefault(delta.index, {"name": "", "arguments": ""})
                entry["name"] += delta.function.name or ""
                entry["arguments"] += delta.function.arguments or ""
    assert reasons[-1] == "tool_calls"
    assert [c["name"] for c in calls.values()] == ["add"]
    jsonschema.validate(json.loads(calls[0]["arguments"]), SCHEMAS["add"])
    assert not any(contents)  # a required call sends no text
    assert len(logprobs) == usage.completion_tokens  # the held tokens' logprobs went out with the call


def test_auto_turns_a_call_block_in_the_answer_into_tool_calls(client):
    # A random model seldom writes a call by itself: the grammar field makes it write one, as a model would.
    block = '<tool_call>\\n{\\"name\\": \\"get_weather\\", \\"arguments\\": {\\"city\\": \\"Oslo\\", \\"unit\\": \\"celsius\\"}}\\n</tool_call>'
    response = client.chat.completions.create(
        model="tiny",
        messages=MESSAGES,
        tools=TOOLS,
        max_tokens=100,
        extra_body={"grammar": f'root ::= "{block}"'},
    )
    choice = response.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    assert choice.message.tool_calls[0].function.name == "get_weather"
    assert json.loads(choice.message.tool_calls[0].function.arguments) == {"city": "Oslo", "unit": "celsius"}
    free = client.chat.completions.create(model="tiny", messages=MESSAGES, tools=TOOLS, max_tokens=8, seed=1)
    assert free.choices[0].message.tool_calls is None and free.choices[0].finish_reason in ("stop", "length")


def test_a_conversation_with_earlier_calls_and_their_results_is_answered(client):
    first = client.chat.completions.create(
        model="tiny",
        messages=MESSAGES,
        tools=TOOLS,
        tool_choice="required",
        parallel_tool_calls=False,
        seed=3,
        max_tokens=200,
    )
    call = first.choices[0].message.tool_calls[0]
    follow_up = [
        *MESSAGES,
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": '{"temperature": 21}'},
    ]
    answer = client.chat.completions.create(model="tiny", messages=follow_up, tools=TOOLS, max_tokens=8)
    assert (
        answer.choices[0].message.tool_calls is None
        and answer.usage.prompt_tokens > first.usage.prompt_tokens
    )


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"tool_choice": "required"}, "tool_choice"),
        ({"tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "nope"}}}, "tool_choice"),
        (
            {"tools": TOOLS, "tool_choice": "required", "response_format": {"type": "json_object"}},
            "tool_choice",
        ),
    ],
)
def test_inconsistent_tool_requests_are_400s(client, fields, param):
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="tiny", messages=MESSAGES, max_tokens=4, **fields)
    assert caught.value.body["param"] == param
