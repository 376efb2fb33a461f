"""The paged KV cache tensors: fixed-size pages of K and V for a set of layers, addressed by flat slot.

A model whose layers all attend to every earlier position keeps one ``KVCache`` for all its layers. A model
with sliding-window layers keeps one per attention group (``GroupedKVCache``): the full-attention layers in
one pool, the layers of each window in another, each with its own pages, so a windowed pool holds only the
pages of its window (``roles.scheduler.kv_cache.kv_groups``).
"""

from __future__ import annotations

import math
import mmap

import torch

from roles.model_files.model_shape import ModelShape


class KVCache:
    """``k[layer]`` and ``v[layer]`` are (num_pages * page_size, num_kv_heads, head_dim) views, for each of
    ``layers`` (every layer of the model unless given).

    Slot ``s`` holds the token at offset ``s % page_size`` of page ``s // page_size``. Page 0 is never
    handed out by the allocator, so block tables can be padded with 0 safely.
    """

    def __init__(
        self,
        shape: ModelShape,
        num_pages: int,
        page_size: int,
        dtype: torch.dtype = torch.float32,
        layers: tuple[int, ...] | None = None,
    ):
        if num_pages < 2:
            raise ValueError(f"the KV cache needs at least 2 pages; got {num_pages}")
        self.layers = tuple(range(shape.num_layers)) if layers is None else tuple(layers)
        self.num_pages = num_pages
        self.page_size = page_size
        self.num_slots = num_pages * page_size
        # (layers, 2, slots, kv_heads, head_dim): one allocation, K and V of a layer side by side.
        dims = (len(self.layers), 2, self.num_slots, shape.num_kv_heads, shape.head_dim)
        self.element_size = torch.empty((), dtype=dtype).element_size()
        nbytes = math.prod(dims) * self.element_size
        # Anonymous memory is zero-filled by the kernel page by page on first touch, so the cache is
        # resident only as far as it is used (torch.zeros would write, and so commit, all of it now).
        self._memory = mmap.mmap(-1, max(nbytes, 1))
        self.storage = torch.frombuffer(self._memory, dtype=dtype, count=math.prod(dims)).view(dims)
        self.k = {layer: self.storage[i, 0] for i, layer in enumerate(self.layers)}
        self.v = {layer: self.storage[i, 1] for i, layer in enumerate(self.layers)}
        self.bytes_per_page = nbytes // num_pages

    @property
    def pools(self) -> tuple[KVCache, ...]:
        """The caches a model step addresses, one per attention group: this one alone."""
        return (self,)

    def pool_of(self, layer: int) -> int:
        return 0

    def write(self, layer: int, slot_mapping: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
        """Store new K/V, (T, num_kv_heads, head_dim) each, at their slots (rounded to the cache's dtype)."""
        self.k[layer].index_copy_(0, slot_mapping, k.to(self.storage.dtype))
        self.v[layer].index_copy_(0, slot_mapping, v.to(self.storage.dtype))


class GroupedKVCache:
    """One KVCache per attention group; ``pools[g]`` holds the layers of group g and is addressed by the
    block tables and slots of group g (``ForwardBatch.paging(g)``)."""

    def __init__(self, pools: list[KVCache]):
        self.pools = tuple(pools)
        self.page_size = pools[0].page_size
        self._pool_of = {layer: g for g, pool in enumerate(pools) for layer in pool.layers}

    def pool_of(self, layer: int) -> int:
        return self._pool_of[layer]
