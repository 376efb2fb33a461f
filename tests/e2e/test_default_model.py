"""`serve` with the bundled SmolLM2: greedy output over HTTP equals the in-process engine on the same file,
for a plain completion and for a chat (whose prompt is the model's own chat template)."""

from __future__ import annotations

import json

import openai
import pydantic
import pytest
from serve_harness import ServeProcess

from roles.protocol import SamplingFields
from roles.scheduler.engine.core import Engine
from roles.scheduler.engine.settings import engine_config
from roles.tokenizer.text_tokenizer import load_text_tokenizer

PROMPT = "The three primary colors are"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    config = {"memory": {"kv_cache_tokens": 4096}, "schedule": {"max_running_requests": 8}}
    with ServeProcess(tmp_path_factory.mktemp("smollm2"), config, ready_timeout_s=240) as running:
        yield running


@pytest.fixture(scope="module")
def client(server):
    return server.openai_client(timeout_s=120)


@pytest.fixture
def engine():
    """Built for each test: an engine sets the kernels' activation dtype when it is built, and every test starts
    from float32 (tests/kernel_gate.py), so one built for the module would run the later tests in float32
    while the server runs its default."""
    return Engine(engine_config(model_path="smollm2", kv_cache_tokens=2048, max_running_requests=2))


@pytest.fixture(scope="module")
def tokenizer():
    return load_text_tokenizer("smollm2")


def greedy_text(engine: Engine, tokenizer, prompt_ids: list[int], max_tokens: int) -> tuple[str, int]:
    [ids] = engine.generate([prompt_ids], SamplingFields(temperature=0, max_tokens=max_tokens))
    return tokenizer.decode([i for i in ids if i not in engine.eos_token_ids]), len(ids)


def test_served_greedy_completion_equals_the_in_process_engine(client, engine, tokenizer):
    served = client.completions.create(model="smollm2", prompt=PROMPT, max_tokens=24, temperature=0)
    expected, num_tokens = greedy_text(engine, tokenizer, tokenizer.encode(PROMPT), 24)
    assert served.choices[0].text == expected
    assert served.usage.completion_tokens == num_tokens


def test_chat_answers_like_the_engine_on_the_templated_prompt(client, engine, tokenizer):
    messages = [{"role": "user", "content": "Say hello."}]
    reply = client.chat.completions.create(model="smollm2", messages=messages, max_tokens=16, temperature=0)
    templated = tokenizer.apply_chat_template(messages, add_generation_prompt=True)
    assert templated.endswith("<|im_start|>assistant\n")  # SmolLM2's ChatML template, from the GGUF
    prompt = tokenizer.encode(templated, add_special_tokens=False)
    assert reply.usage.prompt_tokens == len(prompt)
    expected, num_tokens = greedy_text(engine, tokenizer, prompt, 16)
    assert expected.strip()  # the instruct model answers something
    assert reply.choices[0].message.content == expected
    assert reply.usage.completion_tokens == num_tokens
    assert reply.choices[0].finish_reason == ("stop" if num_tokens < 16 else "length")


class Color(pydantic.BaseModel):
    name: str = pydantic.Field(max_length=20)
    hex_code: str = pydantic.Field(pattern="^#[0-9a-f]{6}$")
    is_primary: bool


class Palette(pydantic.BaseModel):
    colors: list[Color] = pydantic.Field(min_length=1, max_length=3)


def test_the_openai_clients_parse_helper_gets_a_valid_object_from_the_real_model(client):
    completion = client.chat.completions.parse(
        model="smollm2",
        messages=[{"role": "user", "content": "Give me a small palette of primary colors as JSON."}],
        response_format=Palette,
        max_tokens=200,
        temperature=0,
    )
    assert completion.choices[0].finish_reason == "stop"
    palette = completion.choices[0].message.parsed  # the client validated it against Palette's schema
    assert isinstance(palette, Palette) and palette.colors


def test_a_required_tool_call_from_the_real_model_parses(client):
    tool = {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The current weather in a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string", "maxLength": 40}},
                "required": ["city"],
                "additionalProperties": False,
            },
        },
    }
    response = client.chat.completions.create(
        model="smollm2",
        messages=[{"role": "user", "content": "What is the weather like in Paris?"}],
        tools=[tool],
        tool_choice="required",
        parallel_tool_calls=False,
        max_tokens=60,
        temperature=0,
    )
    call = response.choices[0].message.tool_calls[0]
    assert response.choices[0].finish_reason == "tool_calls" and call.function.name == "get_weather"
    assert set(json.loads(call.function.arguments)) == {"city"}


def test_a_regex_past_the_grammar_engines_limits_is_a_400_and_the_server_serves_on(client):
    with pytest.raises(openai.BadRequestError) as caught:
        client.completions.create(
            model="smollm2", prompt="a", max_tokens=4, extra_body={"regex": "(a{1000}){1000}"}
        )
    assert "too many expressions" in caught.value.body["message"]
    answer = client.completions.create(
        model="smollm2", prompt="Yes or no?", max_tokens=4, extra_body={"regex": "(yes|no)"}
    )
    assert answer.choices[0].text in ("yes", "no")
