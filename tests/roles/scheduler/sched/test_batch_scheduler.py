"""Continuous batching, chunked prefill, admission limits, preemption, prefix reuse and abort.

Driven through the Engine with RecallModel (tests/roles/scheduler/scheduler_fakes.py), whose output is
wrong whenever the paging metadata is wrong, so every test also checks the KV bookkeeping.
"""

import random

import pytest

from roles.protocol import SamplingFields
from roles.scheduler.engine.core import Engine
from roles.scheduler.engine.settings import engine_config
from tests.roles.scheduler.scheduler_fakes import RecallModel, expected_greedy, fake_shape


def make_engine(**overrides) -> tuple[Engine, RecallModel]:
    settings = dict(max_running_requests=4, chunked_prefill_size=64, kv_cache_tokens=512, page_size=4)
    model = RecallModel()
    return Engine(engine_config(**{**settings, **overrides}), (model, fake_shape())), model


def greedy(max_tokens: int) -> SamplingFields:
    return SamplingFields(temperature=0, max_tokens=max_tokens)


def random_prompts(count: int, seed: int, max_len: int = 40) -> list[list[int]]:
    rng = random.Random(seed)
    return [[rng.randrange(64) for _ in range(rng.randrange(1, max_len))] for _ in range(count)]


def run_to_end(engine: Engine, outputs: list | None = None) -> dict[str, list[int]]:
    """Step until done; ``outputs`` are those of steps already taken."""
    tokens: dict[str, list[int]] = {}
    while outputs is not None or engine.has_unfinished():
        for output in engine.step() if outputs is None else outputs:
            if output.token_id is not None:
                tokens.setdefault(output.request_id, []).append(output.token_id)
        outputs = None
    return tokens


def test_a_request_joins_a_running_batch_and_leaves_it_when_done():
    engine, model = make_engine()
    engine.add_request("long", [1, 2, 3], greedy(8))
    for _ in range(3):
        engine.step()
    engine.add_request("short", [4, 5, 6, 7, 8], greedy(2))
    tokens = {"long": [], "short": []}
    while engine.has_unfinished():
        for output in engine.step():
            tokens[output.request_id].append(output.token_id)
    # Step 4: long decodes while short prefills in the same forward; step 5 both decode; then long alone.
    assert model.steps[3][0] == [1, 5]
    assert model.steps[4][0] == [1, 1]
    assert all(query_lens == [1] for query_lens, _ in model.steps[5:])
    assert tokens["short"] == expected_greedy([4, 5, 6, 7, 8], 2)
    assert engine.generate([[1, 2, 3]], greedy(8))[0][3:] == tokens["long"]


def test_a_long_prompt_is_prefilled_in_chunks_within_the_budget_mixed_with_decodes():
    engine, model = make_engine(chunked_prefill_size=8)
    engine.add_request("decoding", [9, 9], greedy(12))
    first_outputs = engine.step()
    long_prompt = list(range(30))
    engine.add_request("long", long_prompt, greedy(3))
    tokens = run_to_end(engine, first_outputs)
    assert all(sum(query_lens) <= 8 for query_lens, _ in model.steps)
    chunk_steps = [q for q, _ in model.steps[1:] if len(q) == 2 and q[1] > 1]
    assert [q[1] for q in chunk_steps] == [7, 7, 7, 7, 2]  # 30 prompt tokens next to one decode each step
    assert tokens["long"] == expected_greedy(long_prompt, 3)
    assert tokens["decoding"] == expected_greedy([9, 9], 12)


def test_admission_is_bounded_by_max_running_requests():
    engine, model = make_engine(max_running_requests=2)
    for i in range(4):
        engine.add_request(f"r{i}", [i + 1, 2, 3], greedy(3))
    first_outputs = engine.step()
    assert len(model.steps[0][0]) == 2
    assert engine.stats()["num_running"] == 2 and engine.stats()["num_waiting"] == 2
    tokens = run_to_end(engine, first_outputs)
    assert max(len(q) for q, _ in model.steps) == 2
    assert tokens == {f"r{i}": expected_greedy([i + 1, 2, 3], 3) for i in range(4)}


def test_admission_is_bounded_by_free_kv_pages():
    # 4 usable pages of 4 tokens; a 6-token prompt needs 2 pages, so only two requests fit at first.
    engine, model = make_engine(kv_cache_tokens=16, max_running_requests=4, chunked_prefill_size=32)
    for i in range(3):
        engine.add_request(f"r{i}", [i, 1, 2, 3, 4, 5], greedy(1))
    engine.step()
    assert model.steps[0][0] == [6, 6]
    stats = engine.stats()
    assert (stats["num_running"], stats["num_kv_pages_used"], stats["num_kv_pages_total"]) == (0, 0, 4)
    assert stats["num_waiting"] == 1
    assert run_to_end(engine) == {"r2": expected_greedy([2, 1, 2, 3, 4, 5], 1)}


@pytest.mark.parametrize("page_size", [1, 4, 16])
def test_preemption_recomputes_and_gives_the_same_greedy_output(page_size):
    prompts = random_prompts(8, seed=page_size)
    params = greedy(24)
    roomy, _ = make_engine(page_size=page_size, kv_cache_tokens=4096)
    tight, _ = make_engine(page_size=page_size, kv_cache_tokens=96, chunked_prefill_size=16)
    assert roomy.generate(prompts, params) == tight.generate(prompts, params)
    assert roomy.stats()["num_preemptions"] == 0
    assert tight.stats()["num_preemptions"] > 0
    assert tight.generate(prompts[:1], params)[0] == expected_greedy(prompts[0], 24)


def test_shared_prefix_hits_the_cache_and_keeps_greedy_output():
    prefix = list(range(20, 38))  # 18 tokens: 4 full pages of 4
    prompts = [prefix + [1, 2], prefix + [3]]
    cached, _ = make_engine()
    uncached, _ = make_engine(enable_prefix_cache=False)
    with_reuse = [cached.generate([p], greedy(6))[0] for p in prompts]
    without_reuse = [uncached.generate([p], greedy(6))[0] for p in prompts]
    assert with_reuse == without_reuse == [expected_greedy(p, 6) for p in prompts]
    stats = cached.stats()
    assert stats["num_prefix_hit_tokens"] == 16
    assert stats["num_prefix_queried_tokens"] == 20 + 19
    assert uncached.stats()["num_prefix_hit_tokens"] == 0
    # A repeat of the whole prompt reuses all full pages but still computes its last token.
    cached.generate([prompts[0]], greedy(1))
    assert cached.stats()["num_prefix_hit_tokens"] == 16 + 16


def test_abort_frees_pages_at_once_for_running_and_waiting_requests():
    engine, _ = make_engine(max_running_requests=1)
    engine.add_request("running", list(range(10)), greedy(50))
    engine.add_request("waiting", [1, 2], greedy(50))
    engine.step()
    assert engine.stats()["num_kv_pages_used"] == 3
    assert engine.abort("running") and engine.abort("waiting")
    assert not engine.abort("never-added")
    stats = engine.stats()
    assert (stats["num_kv_pages_used"], stats["num_running"], stats["num_waiting"]) == (0, 0, 0)
    outputs = engine.step()
    assert [(o.request_id, o.token_id, o.finish_reason) for o in outputs] == [
        ("running", None, "abort"),
        ("waiting", None, "abort"),
    ]
    assert not engine.has_unfinished()


def test_scheduler_rejects_a_budget_smaller_than_the_batch():
    with pytest.raises(ValueError, match="chunked_prefill_size must be >= max_running_requests"):
        make_engine(max_running_requests=8, chunked_prefill_size=4)
