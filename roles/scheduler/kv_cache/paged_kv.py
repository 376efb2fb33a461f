"""The paged KV cache: fixed-size pages of K and V for a set of layers, addressed by flat slot.

A model whose layers all attend to every earlier position keeps one ``KVCache`` for all its layers. A model
with sliding-window layers keeps one per attention group (``GroupedKVCache``): the full-attention layers in
one pool, the layers of each window in another, each with its own pages, so a windowed pool holds only the
pages of its window (``roles.scheduler.kv_cache.kv_groups``).

The cache is one numpy array over anonymous memory, which the one-call kernel step addresses as it is; the
op-by-op torch model reads and writes it through tensors viewing that memory (``k``, ``v``: made on first use,
so a server running the kernels alone never builds them).
"""

from __future__ import annotations

import math
import mmap

import numpy as np

from roles.model_files.model_shape import ModelShape


class KVCache:
    """``storage`` is (layers, 2, num_pages * page_size, num_kv_heads, head_dim): K and V of each of ``layers``
    (every layer of the model unless given); ``k[layer]`` and ``v[layer]`` are torch views of a layer's.

    Slot ``s`` holds the token at offset ``s % page_size`` of page ``s // page_size``. Page 0 is never
    handed out by the allocator, so block tables can be padded with 0 safely.
    """

    def __init__(
        self,
        shape: ModelShape,
        num_pages: int,
        page_size: int,
        dtype: np.dtype | str = np.float32,
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
        dtype = np.dtype(dtype)
        if dtype not in (np.float32, np.float16):
            raise ValueError(f"the KV cache holds float32 or float16; got {dtype}")
        self.element_size = dtype.itemsize
        nbytes = math.prod(dims) * self.element_size
        # Anonymous memory is zero-filled by the kernel page by page on first touch, so the cache is
        # resident only as far as it is used (zeroing it here would write, and so commit, all of it now).
        self._memory = mmap.mmap(-1, max(nbytes, 1))
        self.storage = np.frombuffer(self._memory, dtype=dtype, count=math.prod(dims)).reshape(dims)
        self._views: tuple[dict, dict] | None = None
        self.bytes_per_page = nbytes // num_pages

    @property
    def is_half(self) -> bool:
        """Whether K and V are stored as float16 (else float32)."""
        return self.storage.dtype == np.float16

    @property
    def k(self) -> dict:
        """layer -> its K as a (slots, num_kv_heads, head_dim) torch tensor viewing the cache."""
        return self._torch_views()[0]

    @property
    def v(self) -> dict:
        return self._torch_views()[1]

    def _torch_views(self) -> tuple[dict, dict]:
        if self._views is None:
            import torch

            storage = torch.from_numpy(self.storage)
            self._views = (
                {layer: storage[i, 0] for i, layer in enumerate(self.layers)},
                {layer: storage[i, 1] for i, layer in enumerate(self.layers)},
            )
        return self._views

    @property
    def pools(self) -> tuple[KVCache, ...]:
        """The caches a model step addresses, one per attention group: this one alone."""
        return (self,)

    def pool_of(self, layer: int) -> int:
        return 0

    def write(self, layer: int, slot_mapping, k, v) -> None:
        """Store new K/V, (T, num_kv_heads, head_dim) torch tensors each, at their slots (a (T,) int64 tensor),
        rounded to the cache's dtype."""
        keys, values = self.k[layer], self.v[layer]
        keys.index_copy_(0, slot_mapping, k.to(keys.dtype))
        values.index_copy_(0, slot_mapping, v.to(values.dtype))


class GroupedKVCache:
    """One KVCache per attention group; ``pools[g]`` holds the layers of group g and is addressed by the
    block tables and slots of group g (``ForwardBatch.paging(g)``)."""

    def __init__(self, pools: list[KVCache]):
        self.pools = tuple(pools)
        self.page_size = pools[0].page_size
        self._pool_of = {layer: g for g, pool in enumerate(pools) for layer in pool.layers}

    def pool_of(self, layer: int) -> int:
        return self._pool_of[layer]
