"""Each request's pages in every attention group: taken at admission (prefix hits first), added as it grows,
published to the prefix cache as they fill, dropped from a windowed group once behind its window.

``request.page_ids[g]`` is the request's block table in group g: entry i holds positions
[i * page_size, (i + 1) * page_size). A windowed group's entries behind its window are the padding page 0
(``roles.scheduler.kv_cache.kv_groups`` says why that is safe and how the pools are sized).
"""

from __future__ import annotations

from roles.scheduler.kv_cache.kv_groups import KVGroup, match_prefix
from roles.scheduler.kv_cache.prefix_cache import chain_hash, root_hash
from roles.scheduler.sched.request import Request


class RequestPages:
    def __init__(self, groups: list[KVGroup]):
        self.groups = groups
        self.page_size = groups[0].page_size

    def match(self, request: Request, max_match_tokens: int) -> int:
        """Take the request's longest prefix hit in every group; the number of tokens it covers."""
        pages, hashes = match_prefix(
            self.groups, request.token_ids, max_match_tokens, root_hash(request.long_rope)
        )
        for group, table in zip(self.groups, pages, strict=True):
            group.cache.acquire(table)
        request.page_ids = pages
        request.page_hashes = hashes
        request.num_computed_tokens = len(hashes) * self.page_size
        return request.num_computed_tokens

    def reserve(self, request: Request, num_tokens: int) -> bool:
        """Make every group's pages cover the request up to ``num_tokens``; False (nothing taken) if a pool
        lacks the pages."""
        num_entries = -(-num_tokens // self.page_size)
        firsts = [group.first_needed_page(request.num_computed_tokens) for group in self.groups]
        missing = [
            max(0, num_entries - max(len(table), first))
            for table, first in zip(request.page_ids, firsts, strict=True)
        ]
        if any(n > group.cache.num_available_pages for n, group in zip(missing, self.groups, strict=True)):
            return False
        for group, table, first, num_missing in zip(
            self.groups, request.page_ids, firsts, missing, strict=True
        ):
            if num_missing:
                table.extend([0] * (first - len(table)))
                for _ in range(num_missing):
                    page = group.cache.allocate()
                    assert page is not None, "capacity was checked before allocating"
                    table.append(page)
        return True

    def release(self, request: Request) -> None:
        """Drop every page of the request (it ends, or is preempted and will be recomputed)."""
        for group, table in zip(self.groups, request.page_ids or [[]] * len(self.groups), strict=True):
            group.cache.release(table)
        request.page_ids = []
        request.page_hashes = []
        request.num_computed_tokens = 0

    def advance(self, request: Request) -> None:
        """After a step computed more of the request: publish its pages that became full, then release the
        pages of each windowed group that no later query reads."""
        size = self.page_size
        hashes = request.page_hashes
        for page_index in range(len(hashes), request.num_computed_tokens // size):
            parent = hashes[-1] if hashes else root_hash(request.long_rope)
            page_tokens = request.token_ids[page_index * size : (page_index + 1) * size]
            for group, table in zip(self.groups, request.page_ids, strict=True):
                if table[page_index]:
                    group.cache.register(table[page_index], parent, page_tokens)
            hashes.append(chain_hash(parent, tuple(page_tokens)))
        for group, table in zip(self.groups, request.page_ids, strict=True):
            if not group.window:
                continue
            behind: list[int] = []
            index = min(group.first_needed_page(request.num_computed_tokens), len(table)) - 1
            while index >= 0 and table[index]:  # released entries form a run from the front
                behind.append(table[index])
                table[index] = 0
                index -= 1
            group.cache.release(behind[::-1])
