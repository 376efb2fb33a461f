"""The paged KV cache tensors: fixed-size pages of K and V for every layer, addressed by flat slot."""

from __future__ import annotations

import math
import mmap

import torch

from roles.model_files.model_shape import ModelShape


class KVCache:
    """``k[layer]`` and ``v[layer]`` are (num_pages * page_size, num_kv_heads, head_dim) views.

    Slot ``s`` holds the token at offset ``s % page_size`` of page ``s // page_size``. Page 0 is never
    handed out by the allocator, so block tables can be padded with 0 safely.
    """

    def __init__(self, shape: ModelShape, num_pages: int, page_size: int, dtype: torch.dtype = torch.float32):
        if num_pages < 2:
            raise ValueError(f"the KV cache needs at least 2 pages; got {num_pages}")
        self.num_pages = num_pages
        self.page_size = page_size
        self.num_slots = num_pages * page_size
        # (layers, 2, slots, kv_heads, head_dim): one allocation, K and V of a layer side by side.
        dims = (shape.num_layers, 2, self.num_slots, shape.num_kv_heads, shape.head_dim)
        nbytes = math.prod(dims) * torch.empty((), dtype=dtype).element_size()
        # Anonymous memory is zero-filled by the kernel page by page on first touch, so the cache is
        # resident only as far as it is used (torch.zeros would write, and so commit, all of it now).
        self._memory = mmap.mmap(-1, max(nbytes, 1))
        self.storage = torch.frombuffer(self._memory, dtype=dtype, count=math.prod(dims)).view(dims)
        self.k = [self.storage[i, 0] for i in range(shape.num_layers)]
        self.v = [self.storage[i, 1] for i in range(shape.num_layers)]

    def write(self, layer: int, slot_mapping: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
        """Store new K/V, (T, num_kv_heads, head_dim) each, at their slots."""
        self.k[layer].index_copy_(0, slot_mapping, k)
        self.v[layer].index_copy_(0, slot_mapping, v)
