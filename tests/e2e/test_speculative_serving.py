"""A server speculating by n-gram (exec.speculative_method: ngram): its greedy completions are the plain
engine's tokens, and /metrics shows what was drafted and kept."""

from __future__ import annotations

import pytest
from serve_harness import ServeProcess
from served_greedy import assert_served_greedy_equals_engine
from server_probes import metrics, series, wait_until

from conftest import tiny_config

PROMPTS = [
    "Copy this: the red fox, the red fox, the red fox, the red fox, the red fox",
    "one two three four five one two three four five one two three",
    "aaaa aaaa aaaa aaaa",
    "A sentence that has no repetition at all in it.",
]


@pytest.fixture(scope="module")
def server(tiny_model, tmp_path_factory):
    config = tiny_config(tiny_model, exec={"speculative_method": "ngram", "speculative_num_draft_tokens": 4})
    with ServeProcess(tmp_path_factory.mktemp("speculative"), config) as running:
        yield running


def test_served_greedy_output_is_the_plain_engines_and_metrics_count_the_drafts(server, tiny_model):
    assert_served_greedy_equals_engine(server, str(tiny_model), PROMPTS, max_tokens=48)
    scheduler = {"role": "scheduler", "instance": 0}
    idle = series("roleserve_scheduler_running_requests", **scheduler)
    wait_until(lambda: metrics(server)[idle] == 0, "the scheduler reporting itself idle", server)
    samples = metrics(server)
    drafted = samples[series("roleserve_spec_decode_draft_tokens_total", **scheduler)]
    accepted = samples[series("roleserve_spec_decode_accepted_tokens_total", **scheduler)]
    steps = samples[series("roleserve_spec_decode_verification_steps_total", **scheduler)]
    emitted = samples[series("roleserve_spec_decode_emitted_tokens_total", **scheduler)]
    # The tiny random model seldom repeats itself: kept drafts are asserted by the engine's tests.
    assert 0 < drafted and 0 <= accepted <= drafted and emitted == accepted + steps
    ratio = samples[series("roleserve_spec_decode_acceptance_ratio", **scheduler)]
    assert ratio == pytest.approx(accepted / drafted)
    assert samples[series("roleserve_spec_decode_tokens_per_step", **scheduler)] == pytest.approx(
        emitted / steps
    )


def test_a_streamed_answer_is_the_same_text_when_steps_carry_several_tokens(server):
    client = server.openai_client(timeout_s=60)
    body = dict(model="tiny", prompt=PROMPTS[2], max_tokens=48, temperature=0)
    whole = client.completions.create(**body).choices[0].text
    chunks = [
        chunk.choices[0].text for chunk in client.completions.create(**body, stream=True) if chunk.choices
    ]
    assert "".join(chunks) == whole
