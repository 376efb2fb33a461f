"""PageAllocator and PrefixCache: free list, reference counts, hash-chain reuse, LRU eviction, counters."""

import pytest

from roles.scheduler.kv_cache.page_allocator import PageAllocator
from roles.scheduler.kv_cache.prefix_cache import ROOT_HASH, PrefixCache, chain_hash

PAGE = 4


def make_cache(num_pages: int = 8) -> PrefixCache:
    return PrefixCache(PageAllocator(num_pages), PAGE)


def publish(cache: PrefixCache, tokens: list[int]) -> list[int]:
    """Allocate and register one page per full page of ``tokens``, as a finished prefill would."""
    pages, parent = [], ROOT_HASH
    for start in range(0, len(tokens) - PAGE + 1, PAGE):
        page = cache.allocate()
        parent = cache.register(page, parent, tokens[start : start + PAGE])
        pages.append(page)
    return pages


def test_allocator_hands_out_every_page_but_zero_then_runs_dry():
    allocator = PageAllocator(5)
    pages = [allocator.allocate() for _ in range(4)]
    assert sorted(pages) == [1, 2, 3, 4]
    assert allocator.allocate() is None
    assert allocator.decref(pages[0]) == 0
    allocator.free(pages[0])
    assert allocator.num_free_pages == 1
    assert allocator.allocate() == pages[0]


def test_allocator_reference_counts_guard_misuse():
    allocator = PageAllocator(3)
    page = allocator.allocate()
    allocator.incref(page)
    assert allocator.decref(page) == 1
    with pytest.raises(RuntimeError):
        allocator.free(page)
    assert allocator.decref(page) == 0
    with pytest.raises(RuntimeError):
        allocator.decref(page)
    with pytest.raises(ValueError, match="num_pages must be >= 2"):
        PageAllocator(1)


def test_lookup_follows_the_hash_chain_and_stops_at_divergence():
    cache = make_cache()
    tokens = list(range(12))
    pages = publish(cache, tokens)
    assert cache.lookup(tokens, 12)[0] == pages
    assert cache.lookup(tokens[:8] + [99, 98, 97, 96], 12)[0] == pages[:2]
    # The cap keeps the last token out of the match.
    assert cache.lookup(tokens, 11)[0] == pages[:2]
    # Same second page after a different first page is not a hit: the parent hash differs.
    assert cache.lookup([50, 51, 52, 53] + tokens[4:8], 8)[0] == []
    hashes = cache.lookup(tokens, 8)[1]
    assert hashes == [chain_hash(ROOT_HASH, (0, 1, 2, 3)), chain_hash(hashes[0], (4, 5, 6, 7))]


def test_shared_pages_are_reference_counted_and_only_evictable_when_unreferenced():
    cache = make_cache(num_pages=4)  # 3 usable pages
    pages = publish(cache, list(range(8)))  # 2 pages, referenced by their writer
    matched, _ = cache.lookup(list(range(8)), 8)
    cache.acquire(matched)
    assert [cache.allocator.ref_counts[p] for p in pages] == [2, 2]
    cache.release(pages)  # the writer finishes
    assert cache.num_available_pages == 1  # still held by the second request
    cache.release(matched)
    assert cache.num_available_pages == 3 and cache.num_used_pages == 0
    assert cache.num_cached_pages == 2  # kept for reuse, not freed


def test_lru_eviction_takes_the_least_recently_released_page_and_deepest_first():
    cache = make_cache(num_pages=5)  # 4 usable pages
    first = publish(cache, [1] * 8)  # pages a0, a1
    second = publish(cache, [2] * 8)  # pages b0, b1
    cache.release(first)
    cache.release(second)
    assert cache.allocator.num_free_pages == 0
    # First released first; within a sequence the tail page goes before its parent.
    assert cache.allocate() == first[1]
    assert cache.lookup([1] * 8, 8)[0] == first[:1]
    assert cache.allocate() == first[0]
    # Touching b's pages (a new request reuses them) protects them from eviction.
    cache.acquire(second)
    assert cache.allocate() is None
    assert cache.num_evictions == 2


def test_unregistered_and_duplicate_pages_go_straight_back_to_the_free_list():
    cache = make_cache(num_pages=4)
    original = publish(cache, [7] * 4)
    duplicate = cache.allocate()
    cache.register(duplicate, ROOT_HASH, [7] * 4)  # same content, already cached elsewhere
    private = cache.allocate()  # a partial page, never registered
    cache.release([duplicate, private])
    assert cache.allocator.num_free_pages == 2
    assert cache.lookup([7] * 4, 4)[0] == original


def test_disabled_cache_never_matches_and_counters_accumulate():
    cache = PrefixCache(PageAllocator(8), PAGE, is_enabled=False)
    publish(cache, list(range(8)))
    assert cache.lookup(list(range(8)), 8) == ([], [])
    cache.record_query(10, 4)
    cache.record_query(6, 0)
    assert (cache.num_queried_tokens, cache.num_hit_tokens) == (16, 4)
