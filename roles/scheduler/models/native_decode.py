"""A whole decode step of Llama's layer in one kernel call (``exec.weight_dtype: auto``), with Qwen 2's Q/K/V
biases and Qwen 3's per-head Q/K norms where the family has them.

The model's layers, attention over the paged cache, final norm and logits run in ``rs_decode_step``
(kernels/cpu_kernels.cpp): one call and one parallel region instead of ~40 torch ops per layer. Every token
of the step is a row of its own: a decode's one token, or each token of a prefill chunk, which sees its
sequence's pages up to its own position (the call writes the step's K/V before any row attends), with
logits only for the rows the scheduler samples. The plan holds the C view of every weight; it is
built once, after the weights are in place (loaded, or mapped from the weight cache).
"""

from __future__ import annotations

import ctypes

import numpy as np

from roles.scheduler.kernels import native
from roles.scheduler.kv_cache.paged_kv import KVCache
from roles.scheduler.sched.forward_batch import ForwardBatch


def _layer_linears(layer) -> list:
    """A decoder layer's linears in the order of the C struct rs_layer."""
    return [layer.qkv_proj, layer.o_proj, layer.gate_up_proj, layer.down_proj]


def _pointer(vector) -> int | None:
    """A float32 vector's address for the C struct (a numpy array, or a torch tensor through its numpy view),
    or None (NULL) when the layer has no such vector."""
    return None if vector is None else np.asarray(vector).ctypes.data


# Attention scores the call may hold (rows x heads x longest context, float32): 64 MiB.
MAX_SCORES = 1 << 24


class NativeDecodePlan:
    def __init__(self, model):
        shape = model.shape
        layers = (native.RsLayer * shape.num_layers)()
        for index, layer in enumerate(model.layers):
            views = [module.kernel_view() for module in _layer_linears(layer)]
            optional = [_pointer(layer.qkv_bias), _pointer(layer.q_norm), _pointer(layer.k_norm)]
            layers[index] = native.RsLayer(
                _pointer(layer.input_norm), _pointer(layer.post_attention_norm), *views, *optional
            )
        self.embed = model.embedding.kernel_view()
        self.head = self.embed if model.lm_head is None else model.lm_head.kernel_view()
        self.inv_freq = np.ascontiguousarray(np.asarray(model.rotary.inv_freq), dtype=np.float32)
        self.layers = layers  # the structs must outlive every call that points at them
        self.model = native.RsModel(
            shape.num_layers,
            shape.hidden_size,
            shape.intermediate_size,
            shape.num_heads,
            shape.num_kv_heads,
            shape.head_dim,
            shape.vocab_size,
            0,
            shape.rms_norm_eps,
            0.0,
            ctypes.pointer(self.embed),
            ctypes.pointer(self.head),
            _pointer(model.norm),
            layers,
            self.inv_freq.ctypes.data,
        )

    @staticmethod
    def supports(model) -> bool:
        """True for Llama's layer, with or without Q/K/V biases and Q/K norms (no experts, sandwich norms,
        windows, GELU, embedding scale, soft-capping or longrope), when every linear has a kernel view (packed,
        or float32 with in_features % 32 == 0)."""
        shape, family = model.shape, model.family
        plain = (
            not shape.is_moe
            and not shape.layer_windows
            and not shape.final_logit_softcap
            and not shape.attention_scale
            and (shape.rope_scaling or {}).get("rope_type") != "longrope"
            and not (family.sandwich_norms or family.scale_embeddings)
            and family.activation == "silu"
        )
        if not plain:
            return False
        modules = [model.embedding] + ([] if model.lm_head is None else [model.lm_head])
        for layer in model.layers:
            modules += _layer_linears(layer)
        return all(
            getattr(m, "kernel_view", None) is not None and m.kernel_view() is not None for m in modules
        )

    def forward(self, batch: ForwardBatch, kv: KVCache) -> np.ndarray:
        """Logits (len(batch.logits_indices), vocab) float32: every token of the batch is a one-token row.

        Rows whose attention scores (a row per token, per head, per position) would pass MAX_SCORES floats go
        in several calls, in order: each writes its rows' K/V before they attend, so a later call's rows see an
        earlier one's, as they would in one call."""
        num_rows = batch.input_ids.shape[0]
        tables = np.asarray(batch.block_tables)
        logits_rows = None
        if not batch.is_decode_only:  # each token reads its sequence's block table
            tables = np.repeat(tables, batch.query_lens, axis=0)
            logits_rows = _int64(batch.logits_indices)
        rows = _Rows(
            _int64(batch.input_ids),
            _int64(batch.positions),
            _int64(batch.slot_mapping),
            np.ascontiguousarray(tables, dtype=np.int64),
        )
        logits = np.empty(
            (num_rows if logits_rows is None else len(logits_rows), self.model.vocab), np.float32
        )
        per_call = max(1, MAX_SCORES // (self.model.heads * (int(rows.positions.max()) + 1)))
        for first in range(0, num_rows, per_call):
            last = min(first + per_call, num_rows)
            if logits_rows is None:
                wanted, out = None, logits[first:last]
            else:  # the sampled rows within [first, last), counted from first
                lo, hi = np.searchsorted(logits_rows, [first, last])
                wanted, out = np.ascontiguousarray(logits_rows[lo:hi] - first), logits[lo:hi]
            self._call(rows.slice(first, last), wanted, out, kv)
        return logits

    def _call(self, rows: _Rows, logits_rows: np.ndarray | None, logits: np.ndarray, kv: KVCache) -> None:
        """One rs_decode_step over ``rows``: logits of ``logits_rows`` (None: of every row) into ``logits``."""
        step = native.RsDecodeBatch(
            rows.token_ids.shape[0],
            rows.token_ids.ctypes.data,
            rows.positions.ctypes.data,
            rows.slots.ctypes.data,
            rows.tables.ctypes.data,
            rows.tables.shape[1],
            kv.page_size,
            kv.storage.ctypes.data,
            kv.num_slots,
            logits.ctypes.data,
            None if logits_rows is None else logits_rows.ctypes.data,
            logits.shape[0],
            kv.is_half,
        )
        native.decode_step(self.model, step)


class _Rows:
    """A step's one-token rows: token ids, positions, K/V slots and each row's block table (int64 arrays)."""

    def __init__(self, token_ids: np.ndarray, positions: np.ndarray, slots: np.ndarray, tables: np.ndarray):
        self.token_ids, self.positions, self.slots, self.tables = token_ids, positions, slots, tables

    def slice(self, first: int, last: int) -> _Rows:
        if first == 0 and last == self.token_ids.shape[0]:
            return self
        return _Rows(
            self.token_ids[first:last],
            self.positions[first:last],
            self.slots[first:last],
            self.tables[first:last],
        )


def _int64(values) -> np.ndarray:
    """A batch field as a contiguous int64 array (a view when it is one already)."""
    return np.ascontiguousarray(values, dtype=np.int64)
