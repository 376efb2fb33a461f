"""One choice's life in the HTTP front: started (accepted or refused by the scheduler), then token events
turned into text deltas with stop strings, and aborted in the scheduler when it ends early. Real EngineClient
over real ZMQ, the bundled tokenizer, a scripted scheduler at the other end."""

from __future__ import annotations

import asyncio

import pytest
from scheduler_peer import FrontWithPeer, Tokens

from roles.protocol import Overloaded, SamplingFields
from roles.tokenizer.generation import collect, merge_choices, run_choice, start_choice, start_choices
from roles.tokenizer.openai_errors import OpenAIError
from roles.tokenizer.text_tokenizer import load_text_tokenizer

TEXT = " Hello world foo"


@pytest.fixture(scope="module")
def tokenizer():
    return load_text_tokenizer("smollm2")


def run(scenario):
    return asyncio.run(scenario())


def test_a_started_choice_streams_its_text_and_finish_reason(tokenizer):
    ids = tokenizer.encode(TEXT, add_special_tokens=False)

    async def scenario():
        async with FrontWithPeer(tokenizer, lambda generate: Tokens(ids, "length")) as front:
            client = front.state.client
            started = await start_choice(client, [1, 2], SamplingFields(max_tokens=len(ids)))
            assert started.first.token_id == ids[0]
            deltas = [d async for d in run_choice(client, tokenizer, 0, started, [])]
            assert "".join(d.text for d in deltas) == TEXT
            assert [t.token_id for d in deltas for t in d.tokens] == ids
            assert deltas[-1].finish_reason == "length"
            assert client.num_in_flight == 0 and front.peer.aborts == []
            [generate] = front.peer.generates
            assert generate.prompt_ids == [1, 2] and generate.sampling.max_tokens == len(ids)

    run(scenario)


def test_a_stop_string_across_tokens_cuts_the_text_and_aborts_in_the_scheduler(tokenizer):
    ids = tokenizer.encode(TEXT, add_special_tokens=False)

    async def scenario():
        async with FrontWithPeer(tokenizer, lambda generate: Tokens(ids, None)) as front:
            client = front.state.client
            started = await start_choice(client, [1], SamplingFields())
            deltas = [d async for d in run_choice(client, tokenizer, 0, started, ["o w"])]
            assert "".join(d.text for d in deltas) == " Hell"
            assert deltas[-1].finish_reason == "stop"
            assert await front.wait_for_aborts(1) == [started.request_id]

    run(scenario)


def test_a_refusal_is_raised_before_any_delta(tokenizer):
    async def scenario():
        async with FrontWithPeer(tokenizer, lambda generate: Overloaded(generate.request_id, 2.5)) as front:
            with pytest.raises(OpenAIError) as caught:
                await start_choice(front.state.client, [1], SamplingFields())
            assert (caught.value.status, caught.value.retry_after_s) == (503, 2.5)
            assert caught.value.code == "server_overloaded"
        async with FrontWithPeer(tokenizer, lambda generate: "prompt token ids must be in [0, 10)") as front:
            with pytest.raises(OpenAIError) as caught:
                await start_choice(front.state.client, [99], SamplingFields())
            assert caught.value.status == 400 and "[0, 10)" in caught.value.message
            assert front.state.client.num_in_flight == 0

    run(scenario)


def test_when_one_choice_is_refused_the_started_ones_are_aborted(tokenizer):
    def script(generate):
        if generate.prompt_ids == [2]:
            return Overloaded(generate.request_id, 1.0)
        return Tokens([5, 6, 7], None)  # still running when the other is refused

    async def scenario():
        async with FrontWithPeer(tokenizer, script) as front:
            with pytest.raises(OpenAIError) as caught:
                await start_choices(front.state.client, [([1], SamplingFields()), ([2], SamplingFields())])
            assert caught.value.status == 503
            accepted = next(g.request_id for g in front.peer.generates if g.prompt_ids == [1])
            assert await front.wait_for_aborts(1) == [accepted]

    run(scenario)


def test_several_choices_merge_and_collect_per_index(tokenizer):
    hello, world = (tokenizer.encode(t, add_special_tokens=False) for t in (" Hello", " world foo"))

    def script(generate):
        return Tokens(hello if generate.prompt_ids == [1] else world, "stop")

    async def scenario():
        async with FrontWithPeer(tokenizer, script) as front:
            client = front.state.client
            started = await start_choices(client, [([1], SamplingFields()), ([2], SamplingFields())])
            streams = [run_choice(client, tokenizer, i, choice, []) for i, choice in enumerate(started)]
            results = await collect(merge_choices(streams), 2)
            assert [(r.text, r.finish_reason, r.num_tokens) for r in results] == [
                (" Hello", "stop", len(hello)),
                (" world foo", "stop", len(world)),
            ]
            assert client.scheduler_load[0].finished  # the peer's LoadReports reach the client

    run(scenario)
