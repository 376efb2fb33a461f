"""The KV cache's storage in either element type (memory.kv_cache_dtype)."""

from __future__ import annotations

import numpy as np
import torch

from roles.scheduler.kv_cache.paged_kv import KVCache
from tests.roles.scheduler.scheduler_fakes import fake_shape


def test_a_float16_cache_takes_half_the_bytes_and_rounds_what_it_stores():
    shape = fake_shape()
    wide = KVCache(shape, num_pages=4, page_size=8)
    half = KVCache(shape, num_pages=4, page_size=8, dtype=np.float16)
    assert half.storage.dtype == np.float16 and half.bytes_per_page * 2 == wide.bytes_per_page
    k = torch.randn(3, shape.num_kv_heads, shape.head_dim)
    v = torch.randn(3, shape.num_kv_heads, shape.head_dim) * 1000
    slots = torch.tensor([8, 9, 31])
    for cache in (wide, half):
        cache.write(0, slots, k, v)
    assert torch.equal(wide.k[0][slots], k) and torch.equal(wide.v[0][slots], v)
    assert torch.equal(half.k[0][slots], k.half()) and torch.equal(half.v[0][slots], v.half())
    assert not torch.equal(half.v[0][slots].float(), v)  # rounded to 11 significant bits
