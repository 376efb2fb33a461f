"""`serve` with the bundled SmolLM2: greedy output over HTTP equals the in-process engine on the same file."""

from __future__ import annotations

import openai
import pytest
from serve_harness import ServeProcess

from roles.protocol import SamplingFields
from roles.scheduler.engine import Engine, EngineConfig
from roles.tokenizer.text_tokenizer import load_text_tokenizer

PROMPT = "The three primary colors are"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    config = {"memory": {"kv_cache_tokens": 4096}, "schedule": {"max_running_requests": 8}}
    with ServeProcess(tmp_path_factory.mktemp("smollm2"), config, ready_timeout_s=240) as running:
        yield running


def test_served_greedy_completion_equals_the_in_process_engine(server):
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0, timeout=120)
    served = client.completions.create(model="smollm2", prompt=PROMPT, max_tokens=24, temperature=0)
    tokenizer = load_text_tokenizer("smollm2")
    engine = Engine(EngineConfig(model_path="smollm2", kv_cache_tokens=2048, max_running_requests=2))
    [ids] = engine.generate([tokenizer.encode(PROMPT)], SamplingFields(temperature=0, max_tokens=24))
    expected = tokenizer.decode([i for i in ids if i not in engine.eos_token_ids])
    assert served.choices[0].text == expected
    assert served.usage.completion_tokens == len(ids)


def test_chat_with_the_default_model(server):
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0, timeout=120)
    reply = client.chat.completions.create(
        model="smollm2", messages=[{"role": "user", "content": "Say hello."}], max_tokens=16, temperature=0
    )
    assert reply.choices[0].message.content.strip()
    assert reply.choices[0].finish_reason in ("stop", "length")
