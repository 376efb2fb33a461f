"""Fixed-size KV pages: a free list plus a reference count per page."""

from __future__ import annotations


class PageAllocator:
    """Hands out page ids 1..num_pages-1 (page 0 is reserved padding for block tables).

    A page is shared when several requests point at it (prefix reuse); ``ref_counts[page]`` says how many.
    The allocator itself never decides what happens to a page whose count drops to 0: the prefix cache
    either keeps it as an evictable cached page or returns it here with ``free``.
    """

    def __init__(self, num_pages: int):
        if num_pages < 2:
            raise ValueError(f"num_pages must be >= 2 (page 0 is reserved); got {num_pages}")
        self.num_pages = num_pages
        # Popped from the end, so low page ids are handed out first (easier to read in tests and dumps).
        self._free_pages: list[int] = list(range(num_pages - 1, 0, -1))
        self.ref_counts: list[int] = [0] * num_pages

    @property
    def num_usable_pages(self) -> int:
        return self.num_pages - 1

    @property
    def num_free_pages(self) -> int:
        return len(self._free_pages)

    def allocate(self) -> int | None:
        """A fresh page with ref count 1, or None when the free list is empty."""
        if not self._free_pages:
            return None
        page = self._free_pages.pop()
        self.ref_counts[page] = 1
        return page

    def incref(self, page: int) -> None:
        self.ref_counts[page] += 1

    def decref(self, page: int) -> int:
        """Drop one reference and return how many are left."""
        count = self.ref_counts[page] - 1
        if count < 0:
            raise RuntimeError(f"page {page} released more often than it was taken")
        self.ref_counts[page] = count
        return count

    def free(self, page: int) -> None:
        """Return an unreferenced page to the free list."""
        if self.ref_counts[page] != 0:
            raise RuntimeError(f"page {page} freed while still referenced ({self.ref_counts[page]})")
        self._free_pages.append(page)
