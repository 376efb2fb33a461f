"""Request preparation: prompts to ids with the bundled model's tokenizer, and the sampling options
validated once against SamplingFields, with max_tokens settled against the context length."""

from __future__ import annotations

import asyncio

import pytest
from scheduler_peer import FrontWithPeer

from roles.protocol import SamplingFields
from roles.tokenizer.openai_errors import OpenAIError
from roles.tokenizer.request_prep import (
    check_model,
    check_not_draining,
    choice_seed,
    prompt_id_lists,
    sampling_fields,
)
from roles.tokenizer.schemas import ChatCompletionRequest, CompletionRequest
from roles.tokenizer.text_tokenizer import load_text_tokenizer

CHAT = [{"role": "user", "content": "Hi"}]


@pytest.fixture(scope="module")
def tokenizer():
    return load_text_tokenizer("smollm2")


@pytest.fixture
def state(tokenizer):
    front = FrontWithPeer(tokenizer, script=lambda generate: "unused")  # context_length 64
    yield front.state
    front.peer.close()
    front.state.client.requests.close(0)
    front.state.client.results.close(0)
    front.context.term()


def completion(**body) -> CompletionRequest:
    return CompletionRequest(model="smollm2", prompt="Hello", **body)


def chat(**body) -> ChatCompletionRequest:
    return ChatCompletionRequest(model="smollm2", messages=CHAT, **body)


def ids_of(state, prompt):
    return asyncio.run(prompt_id_lists(state, prompt))


def test_prompts_of_every_shape_become_id_lists(state, tokenizer):
    hello = tokenizer.encode("Hello", add_special_tokens=True)
    assert ids_of(state, "Hello") == [hello]
    assert ids_of(state, ["Hello", "Hello"]) == [hello, hello]
    assert ids_of(state, [5, 6, 7]) == [[5, 6, 7]]
    assert ids_of(state, [[5], [6, 7]]) == [[5], [6, 7]]
    for bad in ([], [2**40], [[1], [-1]], "\ud800"):
        with pytest.raises(OpenAIError) as caught:
            ids_of(state, bad)
        assert (caught.value.status, caught.value.param) == (400, "prompt")


def test_defaults_come_from_the_one_declaration_and_max_tokens_from_the_settings(state):
    fields = sampling_fields(state, completion(), prompt_len=4)
    # tokenizer.default_max_tokens in front_settings; the model's end-of-turn tokens <|endoftext|> and <|im_end|>
    assert fields == SamplingFields(max_tokens=16, stop_token_ids=[0, 2])
    # The default shrinks to what fits in the context (64); an explicit one that does not fit is a 400.
    assert sampling_fields(state, completion(), prompt_len=60).max_tokens == 4
    with pytest.raises(OpenAIError) as caught:
        sampling_fields(state, completion(max_tokens=10), prompt_len=60)
    assert (caught.value.param, caught.value.code) == ("max_tokens", "context_length_exceeded")
    with pytest.raises(OpenAIError) as caught:
        sampling_fields(state, completion(), prompt_len=64)
    assert caught.value.param == "prompt"


def test_given_options_are_kept_and_null_means_not_given(state):
    body = completion(temperature=0, top_k=5, seed=3, stop_token_ids=[7, 60000], logprobs=2, top_p=None)
    fields = sampling_fields(state, body, prompt_len=4)
    assert (fields.temperature, fields.top_k, fields.seed, fields.logprobs) == (0.0, 5, 3, 2)
    assert fields.top_p == 1.0
    assert fields.stop_token_ids == [7, 0, 2]  # ids beyond the vocabulary can never be sampled


def test_end_of_turn_tokens_stop_unless_eos_is_ignored(state):
    assert sampling_fields(state, completion(stop_token_ids=[2]), prompt_len=4).stop_token_ids == [2, 0]
    assert sampling_fields(state, completion(ignore_eos=True), prompt_len=4).stop_token_ids == []


@pytest.mark.parametrize(
    ("body", "param"),
    [
        (completion(temperature=2.5), "temperature"),
        (completion(presence_penalty=-3), "presence_penalty"),
        (completion(max_tokens=0), "max_tokens"),
        (completion(logprobs=25), "logprobs"),
        (chat(max_completion_tokens=0), "max_completion_tokens"),
        (chat(logprobs=True, top_logprobs=30), "top_logprobs"),
        (chat(seed="seven"), "seed"),
    ],
)
def test_an_option_out_of_bounds_is_a_400_naming_it_as_the_client_did(state, body, param):
    with pytest.raises(OpenAIError) as caught:
        sampling_fields(state, body, prompt_len=4)
    assert (caught.value.status, caught.value.param, caught.value.code) == (400, param, "invalid_value")
    assert caught.value.message.startswith(f"{param}: ")


def test_chat_maps_its_own_names_onto_the_sampling_fields(state):
    fields = sampling_fields(
        state, chat(max_completion_tokens=5, logprobs=True, top_logprobs=3), prompt_len=4
    )
    assert (fields.max_tokens, fields.logprobs) == (5, 3)
    assert sampling_fields(state, chat(logprobs=True), prompt_len=4).logprobs == 0
    assert sampling_fields(state, chat(top_logprobs=3), prompt_len=4).logprobs is None  # logprobs is off


def test_each_choice_of_a_seeded_request_gets_its_own_seed():
    fields = SamplingFields(seed=10)
    assert choice_seed(fields, 0) is fields
    assert choice_seed(fields, 2).seed == 12 and fields.seed == 10
    assert choice_seed(SamplingFields(seed=2**63 - 1), 1).seed == 0  # stays within the declared bound
    assert choice_seed(SamplingFields(), 3).seed is None


def test_unknown_model_is_a_404_and_a_draining_front_a_503(state):
    with pytest.raises(OpenAIError) as caught:
        check_model(state, "other")
    assert (caught.value.status, caught.value.code) == (404, "model_not_found")
    check_not_draining(state)
    state.is_draining = True
    with pytest.raises(OpenAIError) as caught:
        check_not_draining(state)
    assert caught.value.status == 503
