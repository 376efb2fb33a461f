"""Families with sliding-window layers keep only each window's pages in the paged KV cache, and still decode
greedily token-for-token like transformers' generate: a sequence runs past several windows while the windowed
pool holds far fewer pages than the full one, and a second request that shares a long prefix with the first
hits the prefix cache (its window pages included) with the same tokens as without the cache.
"""

from __future__ import annotations

import pytest

from roles.protocol import SamplingFields
from roles.scheduler.engine.core import Engine
from roles.scheduler.engine.settings import engine_config
from tests.family_checkpoints import transformers_greedy, write_family_checkpoint

NEW_TOKENS = 24
GREEDY = SamplingFields(temperature=0, max_tokens=NEW_TOKENS, ignore_eos=True)
FIRST = [(7 * i + 3) % 250 + 3 for i in range(40)]  # 40 + 24 tokens: 8 windows of 8, 4 of 16
SECOND = FIRST[:33] + [11, 12, 13]  # shares 4 full pages of 8 and one token more


@pytest.fixture(scope="module", params=["gemma3", "mistral", "phi3"])
def windowed_family(request, tmp_path_factory):
    folder = write_family_checkpoint(request.param, tmp_path_factory.mktemp(request.param) / "hf")
    return request.param, str(folder), transformers_greedy(folder, [FIRST, SECOND], NEW_TOKENS)


def _engine(folder: str, enable_prefix_cache: bool) -> Engine:
    settings = dict(max_running_requests=2, chunked_prefill_size=16, kv_cache_tokens=1024, page_size=8)
    return Engine(
        engine_config(
            model_path=folder, weight_dtype="exact", enable_prefix_cache=enable_prefix_cache, **settings
        )
    )


def test_windowed_pools_hold_fewer_pages_and_tokens_match_transformers(windowed_family):
    name, folder, expected = windowed_family
    engine = _engine(folder, enable_prefix_cache=False)
    windowed = [group for group in engine.kv_groups if group.window]
    assert windowed, f"{name} has sliding-window layers"
    for group in windowed:  # 2 requests x (ceil((W - 1) / 8) + 2) + 16 / 8 pages, of 128 configured
        assert group.cache.allocator.num_usable_pages == 2 * (-(-(group.window - 1) // 8) + 2) + 2 < 128
    assert engine.generate([FIRST], GREEDY)[0] == expected[0]
    assert engine.generate([FIRST, SECOND], GREEDY) == expected


def test_a_prefix_hit_past_the_window_matches_transformers_and_the_uncached_run(windowed_family):
    name, folder, expected = windowed_family
    engine = _engine(folder, enable_prefix_cache=True)
    assert engine.generate([FIRST], GREEDY)[0] == expected[0]
    hits_before = engine.stats()["num_prefix_hit_tokens"]
    assert engine.generate([SECOND], GREEDY)[0] == expected[1]
    # The 4 shared full pages, and in each windowed group the pages of the window before position 32.
    assert engine.stats()["num_prefix_hit_tokens"] - hits_before == 32
    assert _engine(folder, enable_prefix_cache=False).generate([SECOND], GREEDY)[0] == expected[1]
