"""Attention groups: the layers that share one KV page pool and one block table per request.

The full-attention layers form one group; the layers of each sliding window W another. A query at position p
of a windowed layer reads only keys at positions > p - W, so once a request's next query position has moved
past a page's last position + W, that page is released from the group (its block-table entry becomes the
padding page 0, which the window mask never reads). A windowed group therefore holds about W / page_size
pages per request, however long the sequence.

Page budget: the full group gets the configured pages (``kv_cache_tokens // page_size``), which bound every
request's length as before. A windowed group needs at most, per running request, the pages of its window plus
those of the tokens a step computes; with every step's new tokens bounded by ``chunked_prefill_size``, that is
``max_running_requests * (ceil((W - 1) / page_size) + 2) + ceil(chunked_prefill_size / page_size)`` pages
(never more than the configured ones). Sized so, a windowed pool never refuses a running request; what is
left of it after requests end keeps released pages cached for prefix hits until it is reused.

Prefix reuse: every group registers its full pages under the same hash chain. A hit of P tokens is valid only
if the full groups still hold pages [0, P) and each windowed group the pages covering positions
[P - W + 1, P), the ones the next query reads; the longest such P is taken.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from roles.model_files.model_shape import ModelShape
from roles.scheduler.kv_cache.page_allocator import PageAllocator
from roles.scheduler.kv_cache.paged_kv import GroupedKVCache, KVCache
from roles.scheduler.kv_cache.prefix_cache import ROOT_HASH, PrefixCache, chain_keys


@dataclass
class KVGroup:
    """One attention group: its window (0: full attention), its layers, its pages and their KV storage."""

    window: int
    layers: tuple[int, ...]
    cache: PrefixCache
    kv: KVCache | None = None  # its layers' K and V (None in tests of page bookkeeping alone)

    @property
    def page_size(self) -> int:
        return self.cache.page_size

    def first_needed_page(self, position: int) -> int:
        """The first page a query at ``position`` (or later) can read; every earlier one may be released."""
        if not self.window:
            return 0
        return max(0, position - self.window + 1) // self.page_size


def attention_groups(shape: ModelShape) -> list[tuple[int, tuple[int, ...]]]:
    """(window, layers) per group: the full-attention layers first (if any), then each window ascending."""
    windows = [shape.window_of(layer) for layer in range(shape.num_layers)]
    return [
        (window, tuple(layer for layer, w in enumerate(windows) if w == window))
        for window in sorted(set(windows))
    ]


def group_num_pages(
    window: int, configured_pages: int, max_running_requests: int, chunked_prefill_size: int, page_size: int
) -> int:
    """Usable pages of a group's pool (the module docstring says why)."""
    if not window:
        return configured_pages
    per_request = -(-(window - 1) // page_size) + 2
    needed = max_running_requests * per_request + -(-chunked_prefill_size // page_size)
    return min(configured_pages, needed)


KV_DTYPES = {"float32": np.float32, "float16": np.float16}  # memory.kv_cache_dtype


def build_kv_groups(shape: ModelShape, config) -> list[KVGroup]:
    """The attention groups of a model with their pools, sized from an EngineConfig's KV budget and of its
    kv_cache_dtype."""
    if config.kv_cache_dtype not in KV_DTYPES:
        raise ValueError(f"kv_cache_dtype must be float32 or float16; got {config.kv_cache_dtype!r}")
    dtype = KV_DTYPES[config.kv_cache_dtype]
    configured_pages = config.kv_cache_tokens // config.page_size
    groups = []
    for window, layers in attention_groups(shape):
        usable = group_num_pages(
            window,
            configured_pages,
            config.max_running_requests,
            config.chunked_prefill_size,
            config.page_size,
        )
        num_pages = usable + 1  # + the reserved padding page 0
        cache = PrefixCache(PageAllocator(num_pages), config.page_size, config.enable_prefix_cache)
        groups.append(
            KVGroup(window, layers, cache, KVCache(shape, num_pages, config.page_size, dtype, layers))
        )
    return groups


def kv_cache_of(groups: list[KVGroup]) -> KVCache | GroupedKVCache:
    """What a model's forward writes and attends to: the one pool, or every group's pools together."""
    pools = [group.kv for group in groups]
    return pools[0] if len(pools) == 1 else GroupedKVCache(pools)


def _layer_runs(layers: tuple[int, ...]) -> str:
    """(0, 1, 2, 4) -> "0-2, 4"."""
    runs: list[list[int]] = []
    for layer in layers:
        if runs and runs[-1][1] == layer - 1:
            runs[-1][1] = layer
        else:
            runs.append([layer, layer])
    return ", ".join(f"{first}" if first == last else f"{first}-{last}" for first, last in runs)


def kv_pool_facts(groups: list[KVGroup]) -> list[dict]:
    """One inspect row per attention group: its layers, window, pages and (with its storage) their element
    type."""
    rows = []
    for group in groups:
        pages = group.cache.allocator.num_usable_pages
        value = f"layers {_layer_runs(group.layers)}: {pages} pages of {group.page_size} tokens"
        source = (
            "memory.kv_cache_tokens"
            if not group.window
            else "schedule.max_running_requests x window pages + schedule.chunked_prefill_size, "
            "at most memory.kv_cache_tokens"
        )
        if group.kv is not None:
            value += f" in {group.kv.storage.dtype.name}"
            source += "; memory.kv_cache_dtype"
        rows.append(
            {
                "key": f"kv_pool {'full' if not group.window else f'window {group.window}'}",
                "value": value,
                "source": source,
            }
        )
    return rows


def match_prefix(
    groups: list[KVGroup], token_ids: list[int], max_match_tokens: int, root: int = ROOT_HASH
) -> tuple[list, list]:
    """The longest cached prefix every group can serve: (pages per group, chain hashes of its pages).

    A windowed group's list has the padding page 0 before the first page its window reads. Takes no
    references. At most ``max_match_tokens`` tokens are matched."""
    size = groups[0].page_size
    if not all(group.cache.is_enabled for group in groups):
        return [[] for _ in groups], []
    keys, hashes = chain_keys(token_ids, max_match_tokens, size, root)
    found = [[group.cache.cached_page(key) for key in keys] for group in groups]
    num_pages = len(keys)
    for group, pages in zip(groups, found, strict=True):
        if not group.window:  # a full group serves a run from page 0
            num_pages = min(num_pages, next((i for i, page in enumerate(pages) if page is None), len(pages)))
    while num_pages > 0:
        needed = [group.first_needed_page(num_pages * size) for group in groups]
        if all(None not in pages[first:num_pages] for first, pages in zip(needed, found, strict=True)):
            break
        num_pages -= 1
    matched = []
    for group, pages in zip(groups, found, strict=True):
        first = group.first_needed_page(num_pages * size)
        matched.append([0] * first + pages[first:num_pages])
    return matched, hashes[:num_pages]
