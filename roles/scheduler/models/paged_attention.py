"""Attention over the paged KV cache, planned once per forward and run per layer with few ops.

Grouped-query trick: the G = num_heads / num_kv_heads query heads sharing one KV head are folded into
the query-length dimension, so SDPA sees (batch, kv_heads, G * queries, D) against (batch, kv_heads, L, D)
and K/V are never repeated. Decode sequences (one new token each) run as one padded batch; each
prefill chunk runs on its own with a causal mask offset by its cached length.

A sliding-window layer (``window`` W > 0) sees only the keys at positions > query position - W, as
transformers and llama.cpp count it; the masks of each window in use are made once per step. A model with
several attention groups has one plan per group, over that group's block tables; a windowed group's entries
behind the window point at the padding page 0, which the window mask never lets a query read.

The gathered K and V go into buffers the plan keeps for all its layers: a fresh tensor per gather is fresh
memory the kernel must fault in and zero each time, which made the gathers most of a step at long contexts
(32 sequences of 1,024 cached tokens: the step 1,053 ms with a tensor per gather, 462 ms with the buffers).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from roles.scheduler.sched.forward_batch import ForwardBatch


@dataclass
class _DecodeGroup:
    token_index: torch.Tensor  # (Bd,) rows of the flattened batch holding these sequences' tokens
    slots: torch.Tensor  # (Bd * Lmax,) cache slots of every cached token, padded with slot 0
    max_len: int
    mask: torch.Tensor | None  # (Bd, 1, 1, Lmax) True = attend; None when every length equals Lmax
    covers_all_tokens: bool  # the group is the whole batch in order: no scatter into the output
    lengths: torch.Tensor  # (Bd,) context lengths
    windowed: dict = field(default_factory=dict)  # window -> its mask, made on first use

    def mask_for(self, window: int) -> torch.Tensor | None:
        if not window or window >= self.max_len:
            return self.mask
        if window not in self.windowed:
            positions = torch.arange(self.max_len)[None, :]
            near = positions > self.lengths[:, None] - 1 - window
            valid = near & (positions < self.lengths[:, None])
            self.windowed[window] = valid[:, None, None, :]
        return self.windowed[window]


@dataclass
class _PrefillChunk:
    start: int  # rows start..end of the flattened batch
    end: int
    slots: torch.Tensor  # (L,) cache slots of the sequence's tokens 0..L-1
    mask: torch.Tensor | None  # (G * Q, L) True = attend; None when Q == 1 (attend to everything)
    query_pos: torch.Tensor  # (Q,) positions of the queries
    queries_per_kv: int
    windowed: dict = field(default_factory=dict)  # window -> its mask, made on first use

    def mask_for(self, window: int) -> torch.Tensor | None:
        length = int(self.slots.shape[0])
        if not window or window >= length:
            return self.mask
        if window not in self.windowed:
            keys = torch.arange(length)[None, :]
            query = self.query_pos[:, None]
            allowed = (keys <= query) & (keys > query - window)  # (Q, L)
            self.windowed[window] = allowed.repeat_interleave(self.queries_per_kv, dim=0)
        return self.windowed[window]


def _sequence_slots(block_table: torch.Tensor, length: int, page_size: int) -> torch.Tensor:
    """Slots of tokens 0..length-1 of a sequence from its block table: (length,) int64."""
    positions = torch.arange(length)
    return block_table[positions // page_size] * page_size + positions % page_size


class PagedAttentionPlan:
    """Gather indices and masks for one ForwardBatch, shared by all layers."""

    def __init__(self, batch: ForwardBatch, page_size: int, queries_per_kv: int, group: int = 0):
        self.num_tokens = int(batch.input_ids.shape[0])
        # (T,) where each layer of the attention group writes this step's K/V
        self.block_tables, self.slot_mapping = batch.paging(group)
        self.queries_per_kv = queries_per_kv
        self._buffers: dict[tuple, torch.Tensor] = {}  # (K or V, dtype, rows) -> the layers' gather buffer
        decode_rows, decode_seqs, self.prefills = [], [], []
        start = 0
        for seq, (query_len, context_len) in enumerate(
            zip(batch.query_lens, batch.context_lens, strict=True)
        ):
            if query_len == 1:
                decode_rows.append(start)
                decode_seqs.append(seq)
            else:
                self.prefills.append(self._plan_prefill(batch, seq, start, query_len, context_len, page_size))
            start += query_len
        self.decode = self._plan_decode(batch, decode_rows, decode_seqs, page_size) if decode_rows else None

    def _plan_prefill(self, batch, seq, start, query_len, context_len, page_size) -> _PrefillChunk:
        slots = _sequence_slots(self.block_tables[seq], context_len, page_size)
        cached = context_len - query_len
        # Query i sits at position cached + i and sees keys 0..cached + i.
        query_pos = torch.arange(cached, context_len)
        causal = torch.arange(context_len)[None, :] <= query_pos[:, None]  # (Q, L)
        mask = causal.repeat_interleave(self.queries_per_kv, dim=0)  # row q * G + g
        return _PrefillChunk(start, start + query_len, slots, mask, query_pos, self.queries_per_kv)

    def _plan_decode(self, batch, rows, seqs, page_size) -> _DecodeGroup:
        lengths = torch.tensor([batch.context_lens[s] for s in seqs])
        max_len = int(lengths.max())
        tables = self.block_tables[seqs]  # (Bd, max_pages)
        positions = torch.arange(max_len)
        page_index = (positions // page_size).clamp(max=tables.shape[1] - 1)
        slots = tables[:, page_index] * page_size + positions % page_size  # (Bd, Lmax)
        valid = positions[None, :] < lengths[:, None]
        slots = torch.where(valid, slots, torch.zeros_like(slots))
        mask = None if bool(valid.all()) else valid[:, None, None, :]
        covers_all = len(rows) == self.num_tokens
        return _DecodeGroup(torch.tensor(rows), slots.reshape(-1), max_len, mask, covers_all, lengths)

    def attend(
        self, q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, scale: float, window: int = 0
    ) -> torch.Tensor:
        """q: (T, H, D) new-token queries; caches: (slots, KVH, D) already holding this step's K/V, of q's dtype
        or float16; window: the layer's sliding window (0: none).

        Returns (T, H * D).
        """
        num_tokens, num_heads, head_dim = q.shape
        kv_heads = k_cache.shape[1]
        group = self.queries_per_kv
        decode = self.decode
        if decode is not None and decode.covers_all_tokens:
            return self._attend_decode(q, k_cache, v_cache, scale, window).reshape(
                num_tokens, num_heads * head_dim
            )
        out = q.new_empty(num_tokens, num_heads * head_dim)
        if decode is not None:
            out[decode.token_index] = self._attend_decode(
                q[decode.token_index], k_cache, v_cache, scale, window
            ).reshape(-1, num_heads * head_dim)
        for chunk in self.prefills:
            query_len = chunk.end - chunk.start
            # (Q, KVH, G, D) -> (KVH, Q * G, D): rows ordered q * G + g to match the mask.
            qs = q[chunk.start : chunk.end].view(query_len, kv_heads, group, head_dim).transpose(0, 1)
            qs = qs.reshape(kv_heads, query_len * group, head_dim)
            ks = self._gathered("k", k_cache, chunk.slots, q.dtype).transpose(0, 1)  # (KVH, L, D)
            vs = self._gathered("v", v_cache, chunk.slots, q.dtype).transpose(0, 1)
            mask = chunk.mask_for(window)
            attended = F.scaled_dot_product_attention(qs, ks, vs, attn_mask=mask, scale=scale)
            attended = attended.view(kv_heads, query_len, group, head_dim).transpose(0, 1)
            out[chunk.start : chunk.end] = attended.reshape(query_len, num_heads * head_dim)
        return out

    def _buffer(self, key: tuple, like: torch.Tensor, rows: int, dtype: torch.dtype) -> torch.Tensor:
        buffer = self._buffers.get((*key, dtype, rows))
        if buffer is None:
            buffer = self._buffers[(*key, dtype, rows)] = like.new_empty((rows, *like.shape[1:]), dtype=dtype)
        return buffer

    def _gathered(
        self, name: str, cache: torch.Tensor, slots: torch.Tensor, dtype: torch.dtype
    ) -> torch.Tensor:
        """(len(slots), KVH, D) rows of a (slots, KVH, D) cache in ``dtype`` (a float16 cache widened after the
        gather), in this plan's buffer for ``name``: valid until the next layer gathers."""
        rows = int(slots.shape[0])
        gathered = torch.index_select(cache, 0, slots, out=self._buffer((name,), cache, rows, cache.dtype))
        if cache.dtype == dtype:
            return gathered
        return self._buffer((name, "widened"), cache, rows, dtype).copy_(gathered)

    def _attend_decode(self, q, k_cache, v_cache, scale, window) -> torch.Tensor:
        decode = self.decode
        batch, num_heads, head_dim = q.shape
        kv_heads = k_cache.shape[1]
        qs = q.view(batch, kv_heads, self.queries_per_kv, head_dim)  # G query heads act as G queries
        shape = (batch, decode.max_len, kv_heads, head_dim)
        ks = self._gathered("k", k_cache, decode.slots, q.dtype).view(shape).transpose(1, 2)
        vs = self._gathered("v", v_cache, decode.slots, q.dtype).view(shape).transpose(1, 2)
        return F.scaled_dot_product_attention(qs, ks, vs, attn_mask=decode.mask_for(window), scale=scale)
