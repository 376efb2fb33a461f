"""Our Llama in torch: RMSNorm, RoPE, GQA attention over the paged KV cache, SwiGLU MLP, tied embeddings.

One ``forward`` serves mixed prefill/decode steps; it returns float32 logits only for the tokens the
scheduler samples from (``batch.logits_indices``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from roles.model_files.gguf_checkpoint import GGUFCheckpoint
from roles.model_files.hf_checkpoint import HFCheckpoint
from roles.model_files.model_path import is_gguf, resolve_model_path
from roles.model_files.model_shape import ModelShape
from roles.scheduler.forward_batch import ForwardBatch
from roles.scheduler.kv_cache import KVCache
from roles.scheduler.models.paged_attention import PagedAttentionPlan
from roles.scheduler.models.quantized_linear import WEIGHT_DTYPES, make_linear, runnable_weight_dtype
from roles.scheduler.models.rotary import RotaryEmbedding, apply_rotary
from roles.scheduler.models.weight_sources import GGUFWeights, HFWeights, WeightSource, as_weight_source


def _frozen(tensor: torch.Tensor) -> nn.Parameter:
    return nn.Parameter(tensor.contiguous(), requires_grad=False)


class LlamaDecoderLayer(nn.Module):
    def __init__(self, shape: ModelShape, index: int, weights: WeightSource, weight_dtype: str):
        super().__init__()
        prefix = f"model.layers.{index}."
        self.index = index
        self.eps = shape.rms_norm_eps
        self.num_heads, self.num_kv_heads, self.head_dim = shape.num_heads, shape.num_kv_heads, shape.head_dim
        self.scale = shape.head_dim**-0.5
        self.q_size = shape.num_heads * shape.head_dim
        self.kv_size = shape.num_kv_heads * shape.head_dim
        self.input_norm = _frozen(weights.float_tensor(prefix + "input_layernorm.weight"))
        self.post_attention_norm = _frozen(weights.float_tensor(prefix + "post_attention_layernorm.weight"))
        # Fused projections: one matmul for Q|K|V and one for gate|up, fewer ops per layer.
        attn = prefix + "self_attn."
        self.qkv_proj = make_linear(
            weights, [attn + "q_proj.weight", attn + "k_proj.weight", attn + "v_proj.weight"], weight_dtype
        )
        self.o_proj = make_linear(weights, [attn + "o_proj.weight"], weight_dtype)
        mlp = prefix + "mlp."
        self.gate_up_proj = make_linear(
            weights, [mlp + "gate_proj.weight", mlp + "up_proj.weight"], weight_dtype
        )
        self.down_proj = make_linear(weights, [mlp + "down_proj.weight"], weight_dtype)
        self.intermediate_size = shape.intermediate_size

    def forward(self, hidden, cos, sin, plan: PagedAttentionPlan, kv: KVCache) -> torch.Tensor:
        """hidden (T, hidden_size) -> (T, hidden_size)."""
        tokens = hidden.shape[0]
        normed = F.rms_norm(hidden, (hidden.shape[-1],), self.input_norm, self.eps)
        q, k, v = self.qkv_proj(normed).split([self.q_size, self.kv_size, self.kv_size], dim=-1)
        q = apply_rotary(q.view(tokens, self.num_heads, self.head_dim), cos, sin)
        k = apply_rotary(k.view(tokens, self.num_kv_heads, self.head_dim), cos, sin)
        kv.write(self.index, plan.slot_mapping, k, v.reshape(tokens, self.num_kv_heads, self.head_dim))
        attended = plan.attend(q, kv.k[self.index], kv.v[self.index], self.scale)
        hidden = hidden + self.o_proj(attended)
        normed = F.rms_norm(hidden, (hidden.shape[-1],), self.post_attention_norm, self.eps)
        gate, up = self.gate_up_proj(normed).split(self.intermediate_size, dim=-1)
        return hidden + self.down_proj(F.silu(gate) * up)


class LlamaForCausalLM(nn.Module):
    """Built from a ModelShape and HF-named weights (a dict of tensors or a WeightSource)."""

    def __init__(self, shape: ModelShape, weights, weight_dtype: str = "exact"):
        super().__init__()
        if weight_dtype not in WEIGHT_DTYPES:
            raise ValueError(f"weight_dtype {weight_dtype!r} is not one of {WEIGHT_DTYPES}")
        weight_dtype = runnable_weight_dtype(weight_dtype)
        weights = as_weight_source(weights)
        self.shape = shape
        self.weight_dtype = weight_dtype
        self.queries_per_kv = shape.num_heads // shape.num_kv_heads
        # auto: the embedding table stays in the file's format and serves lookups and the tied head;
        # the other modes keep a float32 table.
        self.embedding = None
        self.embed_tokens = None
        if weight_dtype == "auto":
            self.embedding = make_linear(weights, ["model.embed_tokens.weight"], "auto")
        else:
            self.embed_tokens = _frozen(weights.float_tensor("model.embed_tokens.weight"))
        self.layers = nn.ModuleList(
            LlamaDecoderLayer(shape, i, weights, weight_dtype) for i in range(shape.num_layers)
        )
        self.norm = _frozen(weights.float_tensor("model.norm.weight"))
        head_name = "lm_head.weight"
        if shape.tie_word_embeddings or not weights.has(head_name):
            head_name = "model.embed_tokens.weight"
        if weight_dtype in ("auto", "exact") and head_name == "model.embed_tokens.weight":
            self.lm_head = None  # tied: reuse the embedding matrix, no second copy
        elif weight_dtype == "auto":
            self.lm_head = make_linear(weights, [head_name], "auto")
        else:
            # The vocabulary projection stays int8 even in int4 mode: GGUFs keep it at 8 bits or more (Q8_0
            # here), and int4 would add error the file itself does not have.
            head_dtype = "int8" if weight_dtype != "exact" else "exact"
            self.lm_head = make_linear(weights, [head_name], head_dtype, prefer_raw=False)
        self.rotary = RotaryEmbedding(shape.head_dim, shape.rope_theta, shape.rope_scaling)
        self._native_decode = None  # NativeDecodePlan, built at the first decode step (weights in place)

    def embed(self, input_ids: torch.Tensor) -> torch.Tensor:
        if self.embedding is not None:
            return self.embedding.rows(input_ids)
        return F.embedding(input_ids, self.embed_tokens)

    def vocab_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        if self.lm_head is not None:
            return self.lm_head(hidden).float()
        if self.embedding is not None:
            return self.embedding(hidden)
        return F.linear(hidden, self.embed_tokens)

    def native_decode_plan(self):
        """The one-call decode step (auto mode, every linear kernel-ready), else None."""
        if self.weight_dtype != "auto":
            return None
        if self._native_decode is None:
            from roles.scheduler.models.native_decode import NativeDecodePlan

            self._native_decode = NativeDecodePlan(self) if NativeDecodePlan.supports(self) else False
        return self._native_decode or None

    @torch.inference_mode()
    def forward(self, batch: ForwardBatch, kv: KVCache) -> torch.Tensor:
        """Logits (B, vocab) float32 for the tokens at ``batch.logits_indices``.

        With a one-call decode plan (auto), sequences adding one token run through it and the rest
        (prefill chunks) op by op, so a prefill never slows the decodes that share its step."""
        native_plan = self.native_decode_plan()
        if native_plan is None:
            return self.forward_ops(batch, kv)
        if batch.is_decode_only:
            return native_plan.forward(batch, kv)
        decodes = [s for s, query_len in enumerate(batch.query_lens) if query_len == 1]
        if not decodes:
            return self.forward_ops(batch, kv)
        prefills = [s for s, query_len in enumerate(batch.query_lens) if query_len != 1]
        logits = torch.empty(len(batch.query_lens), self.shape.vocab_size, dtype=torch.float32)
        logits[decodes] = native_plan.forward(batch.select(decodes), kv)
        logits[prefills] = self.forward_ops(batch.select(prefills), kv)
        return logits

    def forward_ops(self, batch: ForwardBatch, kv: KVCache) -> torch.Tensor:
        """The op-by-op path: any mix of prefill chunks and decodes."""
        plan = PagedAttentionPlan(batch, kv.page_size, self.queries_per_kv)
        cos, sin = self.rotary.cos_sin(batch.positions)
        hidden = self.embed(batch.input_ids)
        for layer in self.layers:
            hidden = layer(hidden, cos, sin, plan, kv)
        hidden = F.rms_norm(
            hidden[batch.logits_indices], (hidden.shape[-1],), self.norm, self.shape.rms_norm_eps
        )
        return self.vocab_logits(hidden)


def load_model(
    path: str, weight_dtype: str = "exact", threads: int | None = None
) -> tuple[LlamaForCausalLM, ModelShape]:
    """Resolve ``path`` (alias, .gguf or HF folder), read its weights and build the model in eval mode."""
    if threads is not None:
        torch.set_num_threads(threads)
    resolved = resolve_model_path(path)
    if is_gguf(resolved):
        checkpoint = GGUFCheckpoint(resolved)
        weights: WeightSource = GGUFWeights(checkpoint)
    else:
        checkpoint = HFCheckpoint(resolved)
        weights = HFWeights(checkpoint)
    shape = checkpoint.shape()
    model = LlamaForCausalLM(shape, weights, weight_dtype).eval()
    return model, shape
