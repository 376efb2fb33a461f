"""`serve` with the bundled SmolLM2: greedy output over HTTP equals the in-process engine on the same file,
for a plain completion and for a chat (whose prompt is the model's own chat template)."""

from __future__ import annotations

import openai
import pytest
from serve_harness import ServeProcess

from roles.protocol import SamplingFields
from roles.scheduler.engine import Engine
from roles.scheduler.engine_settings import engine_config
from roles.tokenizer.text_tokenizer import load_text_tokenizer

PROMPT = "The three primary colors are"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    config = {"memory": {"kv_cache_tokens": 4096}, "schedule": {"max_running_requests": 8}}
    with ServeProcess(tmp_path_factory.mktemp("smollm2"), config, ready_timeout_s=240) as running:
        yield running


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0, timeout=120)


@pytest.fixture(scope="module")
def engine():
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
