"""The OpenAI-compatible API of a real `serve` (tiny random model), through the official openai client."""

from __future__ import annotations

import httpx
import pytest
from serve_harness import ServeProcess
from server_probes import metrics, series

from conftest import tiny_config
from roles.protocol import SamplingFields
from roles.scheduler.engine.core import Engine
from roles.scheduler.engine.settings import engine_config
from roles.tokenizer.text_tokenizer import load_text_tokenizer

NO_EOS = {"ignore_eos": True}


@pytest.fixture(scope="module")
def server(tiny_model, tmp_path_factory):
    with ServeProcess(tmp_path_factory.mktemp("api"), tiny_config(tiny_model)) as running:
        yield running


@pytest.fixture(scope="module")
def client(server):
    return server.openai_client()


def test_models_and_health(server, client):
    models = client.models.list()
    assert [m.id for m in models.data] == ["tiny"]
    assert httpx.get(server.url + "/health").json() == {"status": "ok"}


def test_completion_greedy_is_deterministic_with_usage(client):
    first = client.completions.create(
        model="tiny", prompt="Hello world", max_tokens=12, temperature=0, extra_body=NO_EOS
    )
    again = client.completions.create(
        model="tiny", prompt="Hello world", max_tokens=12, temperature=0, extra_body=NO_EOS
    )
    assert first.choices[0].text == again.choices[0].text
    assert first.choices[0].finish_reason == "length"
    assert first.usage.completion_tokens == 12
    assert first.usage.total_tokens == first.usage.prompt_tokens + 12


def test_usage_counts_the_prompt_tokens_the_prefix_cache_held(client):
    prompt = list(range(5, 5 + 40))  # token ids: two full 16-token pages and a partial one
    first = client.completions.create(model="tiny", prompt=prompt, max_tokens=2, temperature=0)
    again = client.completions.create(model="tiny", prompt=prompt, max_tokens=2, temperature=0)
    chat = [{"role": "user", "content": "word " * 40}]
    client.chat.completions.create(model="tiny", messages=chat, max_tokens=2)
    chat_again = client.chat.completions.create(model="tiny", messages=chat, max_tokens=2)
    assert first.usage.prompt_tokens_details.cached_tokens == 0
    assert again.usage.prompt_tokens_details.cached_tokens == 32  # the full pages
    assert chat_again.usage.prompt_tokens_details.cached_tokens >= 32


def test_tokenize_and_detokenize_agree_with_what_completions_count(server, client):
    tokenized = httpx.post(server.url + "/tokenize", json={"model": "tiny", "prompt": "Hello world"}).json()
    completion = client.completions.create(model="tiny", prompt="Hello world", max_tokens=1)
    assert tokenized["count"] == len(tokenized["tokens"]) == completion.usage.prompt_tokens
    assert tokenized["max_model_len"] == client.models.list().data[0].model_extra["max_model_len"]
    back = httpx.post(server.url + "/detokenize", json={"tokens": tokenized["tokens"]}).json()
    assert back["prompt"].endswith("Hello world")
    chat = [{"role": "user", "content": "Hi"}]
    templated = httpx.post(server.url + "/tokenize", json={"messages": chat}).json()
    answer = client.chat.completions.create(model="tiny", messages=chat, max_tokens=1)
    assert templated["count"] == answer.usage.prompt_tokens


@pytest.mark.parametrize(
    ("path", "body", "status", "param"),
    [
        ("/tokenize", {"prompt": "a", "messages": [{"role": "user", "content": "b"}]}, 400, "prompt"),
        ("/tokenize", '{"prompt": "\\ud800"}', 400, "prompt"),  # JSON's escape of a lone surrogate
        ("/tokenize", {"model": "other", "prompt": "a"}, 404, "model"),
        ("/detokenize", {"tokens": [10**9]}, 400, "tokens"),
    ],
    ids=["prompt and messages", "lone surrogate", "unknown model", "outside the vocabulary"],
)
def test_tokenize_errors_are_openai_errors(server, path, body, status, param):
    if isinstance(body, str):
        response = httpx.post(server.url + path, content=body, headers={"content-type": "application/json"})
    else:
        response = httpx.post(server.url + path, json=body)
    assert response.status_code == status, response.text
    assert response.json()["error"]["param"] == param


def test_completion_batch_prompts_token_ids_and_n(client):
    response = client.completions.create(
        model="tiny", prompt=["The quick", "Numbers like"], n=2, max_tokens=4, temperature=0.8, seed=3
    )
    assert sorted(c.index for c in response.choices) == [0, 1, 2, 3]
    by_ids = client.completions.create(
        model="tiny", prompt=[5, 6, 7, 8], max_tokens=3, temperature=0, extra_body=NO_EOS
    )
    assert by_ids.usage.prompt_tokens == 4 and by_ids.usage.completion_tokens == 3


def test_streamed_completion_matches_the_plain_one_and_reports_usage(client):
    plain = client.completions.create(
        model="tiny", prompt="The cache", max_tokens=10, temperature=0, extra_body=NO_EOS
    )
    chunks = list(
        client.completions.create(
            model="tiny",
            prompt="The cache",
            max_tokens=10,
            temperature=0,
            extra_body=NO_EOS,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    text = "".join(c.choices[0].text for c in chunks if c.choices)
    assert text == plain.choices[0].text
    assert chunks[-1].usage.completion_tokens == 10
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "length"


def test_stop_string_cuts_the_text_plain_and_streamed(client):
    plain = client.completions.create(
        model="tiny", prompt="Hello", max_tokens=24, temperature=0, extra_body=NO_EOS
    )
    text = plain.choices[0].text
    assert len(text) >= 8, f"24 greedy tokens gave only {text!r}"
    # Three characters from inside the text, at their first occurrence: likely to span a token boundary.
    stop = next(text[i : i + 3] for i in range(2, len(text) - 3) if text[i : i + 3].strip())
    expected = text[: text.index(stop)]
    stopped = client.completions.create(
        model="tiny", prompt="Hello", max_tokens=24, temperature=0, extra_body=NO_EOS, stop=[stop]
    )
    assert stopped.choices[0].text == expected
    assert stopped.choices[0].finish_reason == "stop"
    chunks = list(
        client.completions.create(
            model="tiny",
            prompt="Hello",
            max_tokens=24,
            temperature=0,
            extra_body=NO_EOS,
            stop=stop,
            stream=True,
        )
    )
    assert "".join(c.choices[0].text for c in chunks) == expected
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_logprobs_are_sorted_top_n(client):
    response = client.completions.create(
        model="tiny", prompt="Hello", max_tokens=3, temperature=0, logprobs=3, extra_body=NO_EOS
    )
    logprobs = response.choices[0].logprobs
    assert len(logprobs.tokens) == 3 and len(logprobs.token_logprobs) == 3
    for chosen, top in zip(logprobs.token_logprobs, logprobs.top_logprobs, strict=True):
        assert 1 <= len(top) <= 3  # a dict: alternatives that decode to the same text share a key
        assert max(top.values()) == pytest.approx(chosen, abs=1e-4)  # greedy picks the most likely
    assert logprobs.text_offset[0] == 0


def test_chat_applies_the_template_and_answers_like_the_engine_on_the_templated_prompt(client, tiny_model):
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello!"}]
    plain = client.chat.completions.create(
        model="tiny", messages=messages, max_tokens=8, temperature=0, extra_body=NO_EOS
    )
    assert plain.choices[0].message.role == "assistant"
    # The tiny checkpoint's ChatML template, written out: what the server must have tokenized.
    templated = (
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n"
    )
    tokenizer = load_text_tokenizer(str(tiny_model))
    prompt = tokenizer.encode(templated, add_special_tokens=False)
    assert plain.usage.prompt_tokens == len(prompt)
    engine = Engine(engine_config(model_path=str(tiny_model), kv_cache_tokens=1024, max_running_requests=2))
    [ids] = engine.generate([prompt], SamplingFields(temperature=0, max_tokens=8, ignore_eos=True))
    assert plain.choices[0].message.content == tokenizer.decode(ids)
    assert plain.usage.completion_tokens == 8
    chunks = list(
        client.chat.completions.create(
            model="tiny", messages=messages, max_tokens=8, temperature=0, extra_body=NO_EOS, stream=True
        )
    )
    assert chunks[0].choices[0].delta.role == "assistant"
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == plain.choices[0].message.content
    with_logprobs = client.chat.completions.create(
        model="tiny", messages=messages, max_tokens=2, temperature=0, logprobs=True, top_logprobs=2
    )
    assert len(with_logprobs.choices[0].logprobs.content[0].top_logprobs) == 2


@pytest.mark.parametrize(
    "body, status, param",
    [
        ({"model": "tiny", "prompt": "x", "temperature": 5}, 400, "temperature"),
        ({"model": "tiny", "prompt": "x", "top_p": 0}, 400, "top_p"),
        ({"model": "tiny", "prompt": "x", "seed": -1}, 400, "seed"),
        ({"model": "tiny", "prompt": "x", "stop_token_ids": [1, -5]}, 400, "stop_token_ids"),
        ({"model": "tiny", "prompt": "x", "logprobs": 21}, 400, "logprobs"),
        ({"model": "tiny", "prompt": "x", "max_tokens": 0}, 400, "max_tokens"),
        ({"model": "tiny"}, 400, "prompt"),
        ({"model": "nope", "prompt": "x"}, 404, "model"),
        ({"model": "tiny", "prompt": "x", "max_tokens": 100000}, 400, "max_tokens"),
        ({"model": "tiny", "prompt": [999999]}, 400, None),
    ],
)
def test_bad_requests_get_openai_errors(server, body, status, param):
    response = httpx.post(server.url + "/v1/completions", json=body, timeout=30)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["message"] and error["type"]
    if param is not None:
        assert error["param"] == param


def test_malformed_json_is_a_400(server):
    response = httpx.post(
        server.url + "/v1/completions", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert response.status_code == 400
    assert "error" in response.json()


def test_metrics_are_prometheus_text(server, client):
    client.completions.create(model="tiny", prompt="Hi", max_tokens=2)
    samples = metrics(server)
    assert samples[series("roleserve_time_to_first_token_seconds_count", role="tokenizer")] >= 1
    assert 0 <= samples[series("roleserve_kv_cache_usage_ratio", role="scheduler", instance=0)] <= 1


def test_expert_recording_on_a_server_whose_recorder_is_off_is_a_409(server):
    response = httpx.post(server.url + "/admin/expert_distribution/start", timeout=60)
    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "expert_recorder_unavailable"
    assert "expert_distribution_recorder_mode" in error["message"]
