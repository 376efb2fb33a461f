"""Prefix reuse over full KV pages: hash-chained page contents, shared by reference count, LRU-evicted.

A full page's identity is ``(parent hash, its page_size token ids)`` where the parent hash identifies
every earlier page of the sequence, so equal hashes mean equal whole prefixes. Only full, computed pages
are registered; a sequence's last partial page stays private to it.
"""

from __future__ import annotations

from collections import OrderedDict

from roles.scheduler.kv_cache.page_allocator import PageAllocator

ROOT_HASH = 0  # the parent hash of a sequence's first page
# The same tokens rotated with longrope's long factors have other K: their chains start from another root.
LONG_ROPE_ROOT_HASH = hash(("long rope",))


def root_hash(long_rope: bool) -> int:
    return LONG_ROPE_ROOT_HASH if long_rope else ROOT_HASH


def chain_hash(parent_hash: int, page_token_ids: tuple[int, ...]) -> int:
    return hash((parent_hash, page_token_ids))


def chain_keys(
    token_ids: list[int], max_match_tokens: int, page_size: int, root: int = ROOT_HASH
) -> tuple[list, list[int]]:
    """The (parent hash, page tokens) key and the chain hash of each full page within ``max_match_tokens``,
    the first page's parent being ``root``."""
    keys, hashes = [], []
    parent = root
    for start in range(0, max_match_tokens - page_size + 1, page_size):
        key = (parent, tuple(token_ids[start : start + page_size]))
        keys.append(key)
        parent = hash(key)
        hashes.append(parent)
    return keys, hashes


class PrefixCache:
    """Owns page lifetime on top of a PageAllocator.

    Page states: free (in the allocator's free list), referenced (ref count >= 1, maybe also cached), or
    cached-unreferenced (in ``_evictable``, oldest release first). Allocation takes a free page, else
    evicts the least recently released cached page.
    """

    def __init__(self, allocator: PageAllocator, page_size: int, is_enabled: bool = True):
        if page_size < 1:
            raise ValueError(f"page_size must be >= 1; got {page_size}")
        self.allocator = allocator
        self.page_size = page_size
        self.is_enabled = is_enabled
        # (parent hash, page tokens) -> page; the key holds the tokens so a hash collision cannot alias.
        self._page_by_key: dict[tuple[int, tuple[int, ...]], int] = {}
        self._key_by_page: dict[int, tuple[int, tuple[int, ...]]] = {}
        self._evictable: OrderedDict[int, None] = OrderedDict()
        self.num_hit_tokens = 0
        self.num_queried_tokens = 0
        self.num_evictions = 0

    # ---- capacity -------------------------------------------------------------------------------------
    @property
    def num_available_pages(self) -> int:
        """Pages an allocation could obtain right now (free + evictable cached)."""
        return self.allocator.num_free_pages + len(self._evictable)

    @property
    def num_used_pages(self) -> int:
        """Pages referenced by at least one request."""
        return self.allocator.num_usable_pages - self.num_available_pages

    @property
    def num_cached_pages(self) -> int:
        return len(self._key_by_page)

    # ---- lookup ---------------------------------------------------------------------------------------
    def lookup(self, token_ids: list[int], max_match_tokens: int) -> tuple[list[int], list[int]]:
        """The longest run of cached full pages that prefixes ``token_ids``: (pages, chain hashes).

        At most ``max_match_tokens`` tokens are matched (callers keep at least one token to compute, since
        the step that computes the last token is the one that yields logits). Takes no references.
        """
        if not self.is_enabled:
            return [], []
        keys, hashes = chain_keys(token_ids, max_match_tokens, self.page_size)
        pages: list[int] = []
        for key in keys:
            page = self._page_by_key.get(key)
            if page is None:
                break
            pages.append(page)
        return pages, hashes[: len(pages)]

    def cached_page(self, key: tuple[int, tuple[int, ...]]) -> int | None:
        """The page registered under a chain key (see ``chain_keys``), or None."""
        return self._page_by_key.get(key)

    def acquire(self, pages: list[int]) -> None:
        """Take a reference on each page (cached pages stop being evictable); the padding page 0 is skipped."""
        for page in pages:
            if page == 0:
                continue
            if self.allocator.ref_counts[page] == 0:
                del self._evictable[page]
            self.allocator.incref(page)

    def record_query(self, num_queried_tokens: int, num_hit_tokens: int) -> None:
        self.num_queried_tokens += num_queried_tokens
        self.num_hit_tokens += num_hit_tokens

    # ---- allocation -----------------------------------------------------------------------------------
    def allocate(self) -> int | None:
        """A private page with ref count 1, evicting the LRU cached page if needed; None when full."""
        page = self.allocator.allocate()
        if page is not None:
            return page
        if not self._evictable:
            return None
        page, _ = self._evictable.popitem(last=False)
        del self._page_by_key[self._key_by_page.pop(page)]
        self.num_evictions += 1
        self.allocator.free(page)
        return self.allocator.allocate()

    def register(self, page: int, parent_hash: int, page_token_ids: list[int]) -> int:
        """Publish a just-completed full page for reuse and return its chain hash.

        If an identical page is already cached (two requests prefilled the same prefix at once) this one
        stays private and is freed normally on release; the returned hash is the same either way.
        """
        key = (parent_hash, tuple(page_token_ids))
        if self.is_enabled and key not in self._page_by_key and page not in self._key_by_page:
            self._page_by_key[key] = page
            self._key_by_page[page] = key
        return hash(key)

    def release(self, pages: list[int]) -> None:
        """Drop a request's references. Released tail-first so a chain's deepest pages are evicted first; the
        padding page 0 (a windowed group's released entries) is skipped."""
        for page in reversed(pages):
            if page == 0:
                continue
            if self.allocator.decref(page) == 0:
                if page in self._key_by_page:
                    self._evictable[page] = None
                else:
                    self.allocator.free(page)
