"""The architecture numbers of a checkpoint, read from its file (GGUF metadata or config.json).

Families: dense ``llama``, and the mixture-of-experts decoders ``mixtral`` (softmax over the router's logits,
top-k, renormalised) and ``qwen2_moe`` (the same routing, renormalised only with ``norm_topk_prob``, plus a
shared expert gated by a sigmoid, and Q/K/V biases).
"""

from __future__ import annotations

from dataclasses import dataclass, field

SUPPORTED_FAMILIES = ("llama", "mixtral", "qwen2_moe")


@dataclass(frozen=True)
class ModelShape:
    """Everything the model code and the KV cache need to know about a checkpoint's shape."""

    architecture: str  # one of SUPPORTED_FAMILIES
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    rms_norm_eps: float
    rope_theta: float
    context_length: int
    tie_word_embeddings: bool
    # HF-style rope_scaling dict ({"rope_type": "llama3", "factor": ..., ...}) or None for plain RoPE.
    rope_scaling: dict | None = field(default=None, compare=False)
    attention_bias: bool = False  # Q/K/V projections add a bias (qwen2_moe)
    # Mixture of experts: with num_experts > 0 every layer's MLP is a sparse block of num_experts SwiGLU
    # experts of moe_intermediate_size, experts_per_token of them chosen per token.
    num_experts: int = 0
    experts_per_token: int = 0
    moe_intermediate_size: int = 0
    norm_topk_prob: bool = True  # the chosen experts' weights renormalised to sum to 1
    shared_expert_intermediate_size: int = 0  # > 0: an always-on expert, gated by sigmoid(gate(x))

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0

    @property
    def kv_bytes_per_token(self) -> int:
        """float32 K and V for every layer: what one cached token costs."""
        return 2 * self.num_layers * self.num_kv_heads * self.head_dim * 4
