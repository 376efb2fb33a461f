"""Attention groups: which layers share a pool, how big each pool is, and which prefix hits every group serves."""

import pytest

from roles.scheduler.engine.settings import engine_config
from roles.scheduler.kv_cache.kv_groups import (
    KVGroup,
    attention_groups,
    build_kv_groups,
    group_num_pages,
    kv_pool_facts,
    match_prefix,
)
from roles.scheduler.kv_cache.page_allocator import PageAllocator
from roles.scheduler.kv_cache.prefix_cache import ROOT_HASH, PrefixCache
from tests.roles.scheduler.scheduler_fakes import fake_shape

PAGE = 4


def group(window: int, num_pages: int = 16) -> KVGroup:
    return KVGroup(window, (), PrefixCache(PageAllocator(num_pages), PAGE))


def publish(group: KVGroup, tokens: list[int], keep: range | None = None) -> list[int]:
    """Register one page per full page of ``tokens`` (all, or the indices in ``keep``); 0 where none is."""
    pages, parent = [], ROOT_HASH
    for index, start in enumerate(range(0, len(tokens) - PAGE + 1, PAGE)):
        page_tokens = tokens[start : start + PAGE]
        page = group.cache.allocate() if keep is None or index in keep else 0
        next_parent = hash((parent, tuple(page_tokens)))
        if page:
            group.cache.register(page, parent, page_tokens)
        pages.append(page)
        parent = next_parent
    group.cache.release(pages)  # cached, unreferenced: what a finished request leaves
    return pages


def test_layers_group_by_window_with_the_full_layers_first():
    gemma_like = (512, 512, 512, 512, 512, 0, 512, 512, 512, 512, 512, 0)
    assert attention_groups(fake_shape(windows=gemma_like)) == [
        (0, (5, 11)),
        (512, (0, 1, 2, 3, 4, 6, 7, 8, 9, 10)),
    ]
    assert attention_groups(fake_shape(windows=(8, 8))) == [(8, (0, 1))]
    assert attention_groups(fake_shape(windows=(0, 0, 0))) == [(0, (0, 1, 2))]


def test_a_windowed_pool_covers_each_running_window_and_one_step_never_more_than_configured():
    assert group_num_pages(0, 1000, 8, 512, 16) == 1000
    # 8 requests x (ceil(511 / 16) + 2) + 512 / 16
    assert group_num_pages(512, 1000, 8, 512, 16) == 8 * 34 + 32
    assert group_num_pages(512, 100, 8, 512, 16) == 100


def test_a_hit_is_the_longest_prefix_whose_window_pages_are_cached():
    full, windowed = group(0), group(8)  # a query at 24 reads positions 17..24: pages 4 and 5
    tokens = list(range(100, 132))  # 8 pages
    full_pages = publish(full, tokens)
    publish(windowed, tokens, keep=range(3, 6))
    pages, hashes = match_prefix([full, windowed], tokens + [1], 33)
    # Pages 6 and 7 of the windowed group are gone, so the hit stops at 24 tokens (6 pages).
    assert len(hashes) == 6
    assert pages[0] == full_pages[:6]
    assert pages[1][:4] == [0, 0, 0, 0] and 0 not in pages[1][4:6]
    assert hashes == list(_chain(tokens))[:6]


def test_a_windowed_page_missing_inside_the_window_shortens_the_hit_further():
    full, windowed = group(0), group(8)
    tokens = list(range(100, 132))
    publish(full, tokens)
    publish(windowed, tokens, keep=range(0, 4))  # pages 0..3: a hit of 16 (window pages 2, 3) at most
    assert len(match_prefix([full, windowed], tokens, 32)[1]) == 4


def test_without_a_full_group_the_window_alone_decides_and_a_disabled_cache_never_hits():
    windowed = group(8)
    tokens = list(range(100, 132))
    publish(windowed, tokens, keep=range(2, 5))
    pages, hashes = match_prefix([windowed], tokens, 32)
    assert len(hashes) == 5 and pages[0][:3] == [0, 0, 0]
    off = KVGroup(8, (), PrefixCache(PageAllocator(16), PAGE, is_enabled=False))
    assert match_prefix([off], tokens, 32) == ([[]], [])


def test_an_evicted_windowed_page_is_never_matched_again():
    full, windowed = group(0), group(8, num_pages=3)  # 2 usable windowed pages
    tokens = list(range(100, 116))
    publish(full, tokens)
    publish(windowed, tokens, keep=range(2, 4))
    assert len(match_prefix([full, windowed], tokens, 16)[1]) == 4
    windowed.cache.allocate()  # evicts the least recently released cached page
    assert len(match_prefix([full, windowed], tokens, 16)[1]) < 4


def _chain(tokens: list[int]):
    parent = ROOT_HASH
    for start in range(0, len(tokens), PAGE):
        parent = hash((parent, tuple(tokens[start : start + PAGE])))
        yield parent


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_the_pool_facts_name_the_caches_element_type(dtype):
    """The inspect row of a pool built with its storage says what K and V are stored as, and which setting
    chose it."""
    config = engine_config(kv_cache_tokens=64, page_size=PAGE, kv_cache_dtype=dtype)
    [row] = kv_pool_facts(build_kv_groups(fake_shape(), config))
    assert row["value"].endswith(f"pages of {PAGE} tokens in {dtype}")
    assert "memory.kv_cache_dtype" in row["source"]
