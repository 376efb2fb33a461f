"""Pages per attention group through the Engine: a windowed group keeps only its window as requests advance
(decode and chunked prefill), its pool is smaller than the full one, preemption and prefix reuse stay right.

RecallModel (tests/roles/scheduler/scheduler_fakes.py) with one full and one windowed layer reads back, every
step, what each query sees in both pools, so a page released too early or a wrong block-table entry fails.
"""

import pytest

from roles.protocol import SamplingFields
from roles.scheduler.engine.core import Engine
from roles.scheduler.engine.settings import engine_config
from tests.roles.scheduler.scheduler_fakes import RecallModel, expected_greedy, fake_shape

WINDOW = 8
PAGE = 4


def make_engine(**overrides) -> tuple[Engine, RecallModel]:
    settings = dict(max_running_requests=2, chunked_prefill_size=16, kv_cache_tokens=512, page_size=PAGE)
    windows = (0, WINDOW)
    model = RecallModel(windows=windows)
    return Engine(engine_config(**{**settings, **overrides}), (model, fake_shape(windows=windows))), model


def greedy(max_tokens: int) -> SamplingFields:
    return SamplingFields(temperature=0, max_tokens=max_tokens)


def held_entries(table: list[int]) -> list[int]:
    return [index for index, page in enumerate(table) if page]


def test_the_windowed_pool_is_sized_for_the_running_requests_and_the_full_one_as_configured():
    engine, _ = make_engine()
    full, windowed = engine.kv_groups
    assert (full.window, full.layers, windowed.window, windowed.layers) == (0, (0,), WINDOW, (1,))
    assert full.cache.allocator.num_usable_pages == 512 // PAGE
    # 2 requests x (ceil(7 / 4) + 2) + ceil(16 / 4)
    assert windowed.cache.allocator.num_usable_pages == 2 * 4 + 4
    assert engine.stats()["num_kv_pages_total"] == 128 + 12


def test_a_decoding_request_releases_the_pages_behind_its_window():
    engine, _ = make_engine()
    prompt = list(range(1, 31))
    engine.add_request("r", prompt, greedy(40))
    request = engine._requests["r"]
    windowed_pool = engine.kv_groups[1].cache
    tokens = []
    while engine.has_unfinished():
        for output in engine.step():
            tokens.append(output.token_id)
        if request.is_finished:
            break
        position = request.num_computed_tokens  # the next query
        held = held_entries(request.page_ids[1])
        # Held: exactly the pages from the one holding position - WINDOW + 1 to the last computed one.
        assert held == list(range(max(0, position - WINDOW + 1) // PAGE, -(-position // PAGE)))
        assert windowed_pool.num_used_pages == len(held) <= -(-(WINDOW - 1) // PAGE) + 1
        assert len(held_entries(request.page_ids[0])) == -(-position // PAGE)
    assert tokens == expected_greedy(prompt, 40)
    assert engine.stats()["num_kv_pages_used"] == 0


def test_a_prefill_chunk_longer_than_the_window_reads_every_key_its_queries_see():
    engine, model = make_engine(chunked_prefill_size=24, max_running_requests=2)
    prompts = [list(range(3, 60)), list(range(40, 3, -1))]
    assert engine.generate(prompts, greedy(12)) == [expected_greedy(p, 12) for p in prompts]
    assert any(max(query_lens) == 24 for query_lens, _ in model.steps)


def test_preemption_for_windowed_pages_recomputes_the_same_tokens():
    # 3 full pages of room per request at most: the newest request is preempted and recomputed.
    engine, _ = make_engine(kv_cache_tokens=40, max_running_requests=2, chunked_prefill_size=8)
    prompts = [list(range(1, 13)), list(range(20, 30))]
    assert engine.generate(prompts, greedy(16)) == [expected_greedy(p, 16) for p in prompts]
    assert engine.stats()["num_preemptions"] > 0
    assert engine.stats()["num_kv_pages_used"] == 0


def test_a_prefix_hit_needs_the_window_pages_before_its_end():
    engine, _ = make_engine(max_running_requests=1)
    prefix = list(range(10, 34))  # 24 tokens: 6 full pages
    first = engine.generate([prefix + [1, 2, 3]], greedy(4))[0]
    assert first == expected_greedy(prefix + [1, 2, 3], 4)
    # The first request released its windowed pages behind the window into the cache; those of the window
    # before position 24 (pages 4 and 5) are there, so the hit covers the whole shared prefix.
    second = engine.generate([prefix + [7]], greedy(4))[0]
    assert second == expected_greedy(prefix + [7], 4)
    assert engine.stats()["num_prefix_hit_tokens"] == 24


def test_a_prefix_hit_stops_where_the_windowed_pages_were_reused():
    engine, _ = make_engine(max_running_requests=1, chunked_prefill_size=4)
    prefix = list(range(10, 34))
    engine.generate([prefix + [1, 2, 3]], greedy(4))
    # A long unrelated request cycles the small windowed pool (4 pages here), evicting every cached page of
    # the first one, while the full pool still holds its pages.
    engine.generate([list(range(40, 64)) * 2], greedy(2))
    full, windowed = engine.kv_groups
    assert windowed.cache.num_evictions > 0
    hits_before = engine.stats()["num_prefix_hit_tokens"]
    assert engine.generate([prefix + [7]], greedy(4))[0] == expected_greedy(prefix + [7], 4)
    hit = engine.stats()["num_prefix_hit_tokens"] - hits_before
    assert hit < 24  # the full pages alone are not a hit: the window's pages are gone


@pytest.mark.parametrize("enable_prefix_cache", [True, False])
def test_many_requests_sharing_prefixes_give_the_uncached_tokens(enable_prefix_cache):
    engine, _ = make_engine(
        enable_prefix_cache=enable_prefix_cache, max_running_requests=3, chunked_prefill_size=12
    )
    base = list(range(5, 45))
    prompts = [base[:n] + [n] for n in (9, 17, 23, 33, 40, 12)]
    assert engine.generate(prompts, greedy(10)) == [expected_greedy(p, 10) for p in prompts]
    assert engine.stats()["num_kv_pages_used"] == 0
