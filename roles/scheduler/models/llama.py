"""The decoder every family shares, in torch: RMSNorm, RoPE, GQA attention over the paged KV cache, a gated MLP,
tied embeddings.

A family (``roles.model_files.families``) switches on what it adds: Q/K/V biases, per-head Q/K norms, norms on
the attention's and feed-forward's outputs, GELU-tanh, scaled embeddings, a sliding window per layer with its
own rotary base, soft-capped logits; the mixtures of experts (Mixtral, Qwen MoE) put a sparse block (``moe``)
in place of the MLP.

One ``forward`` serves mixed prefill/decode steps; it returns float32 logits only for the tokens the
scheduler samples from (``batch.logits_indices``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from roles.model_files.families.registry import family_named
from roles.model_files.model_shape import ModelShape
from roles.scheduler.kv_cache.paged_kv import GroupedKVCache, KVCache
from roles.scheduler.models.paged_attention import PagedAttentionPlan
from roles.scheduler.models.placeholders import meta
from roles.scheduler.models.quantized_linear import has_linear, linear_for
from roles.scheduler.models.rotary import RotaryEmbedding, apply_rotary
from roles.scheduler.models.sparse_moe import SparseMoeBlock
from roles.scheduler.models.swiglu import gated_mlp
from roles.scheduler.moe.shard_view import ShardView
from roles.scheduler.sched.forward_batch import ForwardBatch


def _vector(size: int) -> nn.Parameter:
    return nn.Parameter(meta((size,)), requires_grad=False)


class LlamaDecoderLayer(nn.Module):
    def __init__(
        self, shape: ModelShape, index: int, state: dict[str, torch.Tensor], shard: ShardView | None = None
    ):
        super().__init__()
        prefix = f"layers.{index}."
        family = family_named(shape.architecture)
        self.index = index
        self.eps = shape.rms_norm_eps
        self.num_heads, self.num_kv_heads, self.head_dim = shape.num_heads, shape.num_kv_heads, shape.head_dim
        self.scale = shape.attention_scale or shape.head_dim**-0.5
        self.window = shape.window_of(index)
        self.is_local = self.window > 0 and shape.rope_theta_local > 0  # rotates with the local base
        self.activation = family.activation
        self.q_size = shape.num_heads * shape.head_dim
        self.kv_size = shape.num_kv_heads * shape.head_dim
        hidden, inter = shape.hidden_size, shape.intermediate_size
        self.input_norm = _vector(hidden)
        self.post_attention_norm = _vector(hidden)
        self.q_norm = _vector(shape.head_dim) if family.qk_norm else None
        self.k_norm = _vector(shape.head_dim) if family.qk_norm else None
        self.attn_output_norm = _vector(hidden) if family.sandwich_norms else None
        self.ffn_output_norm = _vector(hidden) if family.sandwich_norms else None
        # Fused projections: one matmul for Q|K|V and one for gate|up, fewer ops per layer.
        self.qkv_proj = linear_for(state, prefix + "qkv_proj.", self.q_size + 2 * self.kv_size, hidden)
        self.qkv_bias = _vector(self.q_size + 2 * self.kv_size) if shape.attention_bias else None
        self.o_proj = linear_for(state, prefix + "o_proj.", hidden, self.q_size)
        self.moe = SparseMoeBlock(shape, index, state, prefix + "moe.", shard=shard) if shape.is_moe else None
        if self.moe is None:
            self.gate_up_proj = linear_for(state, prefix + "gate_up_proj.", 2 * inter, hidden)
            self.down_proj = linear_for(state, prefix + "down_proj.", hidden, inter)

    def _norm(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        return F.rms_norm(x, (x.shape[-1],), weight, self.eps)

    def forward(
        self, hidden, cos, sin, plans: list[PagedAttentionPlan], kv: KVCache | GroupedKVCache
    ) -> torch.Tensor:
        """hidden (T, hidden_size) -> (T, hidden_size); plans: one per pool of ``kv`` (attention group)."""
        tokens = hidden.shape[0]
        qkv = self.qkv_proj(self._norm(hidden, self.input_norm))
        if self.qkv_bias is not None:
            qkv = qkv + self.qkv_bias
        q, k, v = qkv.split([self.q_size, self.kv_size, self.kv_size], dim=-1)
        q = q.view(tokens, self.num_heads, self.head_dim)
        k = k.view(tokens, self.num_kv_heads, self.head_dim)
        if self.q_norm is not None:  # over each head, before the rotation
            q, k = self._norm(q, self.q_norm), self._norm(k, self.k_norm)
        q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
        group = kv.pool_of(self.index)
        plan, pool = plans[group], kv.pools[group]
        pool.write(self.index, plan.slot_mapping, k, v.reshape(tokens, self.num_kv_heads, self.head_dim))
        attended = self.o_proj(
            plan.attend(q, pool.k[self.index], pool.v[self.index], self.scale, self.window)
        )
        if self.attn_output_norm is not None:
            attended = self._norm(attended, self.attn_output_norm)
        hidden = hidden + attended
        normed = self._norm(hidden, self.post_attention_norm)
        if self.moe is not None:
            out = self.moe(normed)
        else:
            out = gated_mlp(self.gate_up_proj, self.down_proj, normed, self.activation)
        if self.ffn_output_norm is not None:
            out = self._norm(out, self.ffn_output_norm)
        return hidden + out


class LlamaForCausalLM(nn.Module):
    """Built from a ModelShape with placeholders; ``model_from_state`` loads the converted tensors into it.

    The converted state (``roles.weight_format.execution_format``) tells which kind each linear is (packed
    blocks, float32, int8, int4) and whether the head is its own matrix; the shape gives every size."""

    def __init__(
        self,
        shape: ModelShape,
        state: dict[str, torch.Tensor],
        weight_dtype: str = "exact",
        shard: ShardView | None = None,
    ):
        """shard: this expert-parallel rank's experts (the state then holds only those, see ExpertShard)."""
        super().__init__()
        self.shape = shape
        self.family = family_named(shape.architecture)
        self.weight_dtype = weight_dtype
        # Gemma: the embeddings are scaled by sqrt(hidden size), a float32 number as transformers makes it.
        self.embedding_scale = (
            float(torch.tensor(shape.hidden_size**0.5)) if self.family.scale_embeddings else 0.0
        )
        self.queries_per_kv = shape.num_heads // shape.num_kv_heads
        vocab, hidden = shape.vocab_size, shape.hidden_size
        # auto: the embedding table stays in the file's format and serves lookups and the tied head;
        # the other modes keep a float32 table.
        self.embedding = None
        self.embed_tokens = None
        if has_linear(state, "embedding."):
            self.embedding = linear_for(state, "embedding.", vocab, hidden)
        else:
            self.embed_tokens = nn.Parameter(meta((vocab, hidden)), requires_grad=False)
        self.layers = nn.ModuleList(
            LlamaDecoderLayer(shape, i, state, shard) for i in range(shape.num_layers)
        )
        self.norm = _vector(hidden)
        # None: tied, the embedding matrix serves as the head (no second copy).
        self.lm_head = linear_for(state, "lm_head.", vocab, hidden) if has_linear(state, "lm_head.") else None
        self.rotary = RotaryEmbedding(shape.head_dim, shape.rope_theta, shape.rope_scaling)
        # Sliding-window layers with a rotary base of their own (Gemma 3) rotate with it, unscaled.
        self.local_rotary = (
            RotaryEmbedding(shape.head_dim, shape.rope_theta_local, None) if shape.rope_theta_local else None
        )
        self._native_decode = None  # NativeDecodePlan, built at the first decode step (weights in place)

    def embed(self, input_ids: torch.Tensor) -> torch.Tensor:
        if self.embedding is not None:
            rows = self.embedding.rows(input_ids)
        else:
            rows = F.embedding(input_ids, self.embed_tokens)
        return rows * self.embedding_scale if self.embedding_scale else rows

    def vocab_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        if self.lm_head is not None:
            logits = self.lm_head(hidden).float()
        elif self.embedding is not None:
            logits = self.embedding(hidden)
        else:
            logits = F.linear(hidden, self.embed_tokens)
        cap = self.shape.final_logit_softcap
        return torch.tanh(logits / cap) * cap if cap else logits

    def native_decode_plan(self):
        """The one-call decode step (auto mode, a dense unbiased model, every linear kernel-ready), else None.

        The kernels' decoder runs Llama's layer: other families run op by op (``NativeDecodePlan.supports``)."""
        if self.weight_dtype != "auto":
            return None
        if self._native_decode is None:
            from roles.scheduler.models.native_decode import NativeDecodePlan

            self._native_decode = NativeDecodePlan(self) if NativeDecodePlan.supports(self) else False
        return self._native_decode or None

    @torch.inference_mode()
    def forward(self, batch: ForwardBatch, kv: KVCache | GroupedKVCache) -> torch.Tensor:
        """Logits (B, vocab) float32 for the tokens at ``batch.logits_indices``: with a one-call plan (auto), the
        whole step through it, prefill chunks as one-token rows; else op by op."""
        native_plan = self.native_decode_plan()
        if native_plan is None:
            return self.forward_ops(batch, kv)
        return torch.from_numpy(native_plan.forward(batch, kv))

    @torch.inference_mode()
    def idle_pass(self) -> None:
        """An expert-parallel rank with nothing to compute this step: no tokens, but at every MoE layer it
        joins the exchange, so the other ranks' tokens reach its experts."""
        hidden = self.embed(torch.empty(0, dtype=torch.int64))
        for layer in self.layers:
            layer.moe(hidden)

    def forward_ops(self, batch: ForwardBatch, kv: KVCache | GroupedKVCache) -> torch.Tensor:
        """The op-by-op path: any mix of prefill chunks and decodes."""
        batch = batch.as_torch()
        plans = [
            PagedAttentionPlan(batch, kv.page_size, self.queries_per_kv, g) for g in range(len(kv.pools))
        ]
        cos, sin = self.rotary.cos_sin(batch.positions, batch.long_rope_rows)
        local = self.local_rotary.cos_sin(batch.positions) if self.local_rotary is not None else None
        hidden = self.embed(batch.input_ids)
        for layer in self.layers:
            layer_cos, layer_sin = local if layer.is_local else (cos, sin)
            hidden = layer(hidden, layer_cos, layer_sin, plans, kv)
        hidden = F.rms_norm(
            hidden[batch.logits_indices], (hidden.shape[-1],), self.norm, self.shape.rms_norm_eps
        )
        return self.vocab_logits(hidden)
