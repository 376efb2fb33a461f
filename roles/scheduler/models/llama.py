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
from roles.scheduler.models.quantized_linear import WEIGHT_DTYPES, make_linear
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
        weights = as_weight_source(weights)
        self.shape = shape
        self.weight_dtype = weight_dtype
        self.queries_per_kv = shape.num_heads // shape.num_kv_heads
        self.embed_tokens = _frozen(weights.float_tensor("model.embed_tokens.weight"))
        self.layers = nn.ModuleList(
            LlamaDecoderLayer(shape, i, weights, weight_dtype) for i in range(shape.num_layers)
        )
        self.norm = _frozen(weights.float_tensor("model.norm.weight"))
        head_name = "lm_head.weight"
        if shape.tie_word_embeddings or not weights.has(head_name):
            head_name = "model.embed_tokens.weight"
        if weight_dtype == "exact" and head_name == "model.embed_tokens.weight":
            self.lm_head = None  # tied: reuse the embedding matrix, no second copy
        else:
            # The vocabulary projection stays int8 even in int4 mode: GGUFs keep it at 8 bits or more (Q8_0
            # here), and int4 would add error the file itself does not have.
            head_dtype = "int8" if weight_dtype != "exact" else "exact"
            self.lm_head = make_linear(weights, [head_name], head_dtype, prefer_raw=False)
        self.rotary = RotaryEmbedding(shape.head_dim, shape.rope_theta, shape.rope_scaling)

    @torch.inference_mode()
    def forward(self, batch: ForwardBatch, kv: KVCache) -> torch.Tensor:
        """Logits (B, vocab) float32 for the tokens at ``batch.logits_indices``."""
        plan = PagedAttentionPlan(batch, kv.page_size, self.queries_per_kv)
        cos, sin = self.rotary.cos_sin(batch.positions)
        hidden = F.embedding(batch.input_ids, self.embed_tokens)
        for layer in self.layers:
            hidden = layer(hidden, cos, sin, plan, kv)
        hidden = F.rms_norm(
            hidden[batch.logits_indices], (hidden.shape[-1],), self.norm, self.shape.rms_norm_eps
        )
        if self.lm_head is None:
            return F.linear(hidden, self.embed_tokens)
        return self.lm_head(hidden).float()


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
