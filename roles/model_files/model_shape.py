"""The architecture numbers of a checkpoint, read from its file (GGUF metadata or config.json).

``architecture`` names the family (``roles.model_files.families``), which fixes how the decoder differs from
Llama's; the fields here are the numbers a checkpoint of that family sets. Mixtures of experts: ``mixtral``
(softmax over the router's logits, top-k, renormalised), ``qwen2_moe`` (renormalised only with
``norm_topk_prob``, plus a shared expert gated by a sigmoid, and Q/K/V biases) and ``qwen3_moe``.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ModelShape:
    """Everything the model code and the KV cache need to know about a checkpoint's shape."""

    architecture: str  # a family name (roles.model_files.families.registry)
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
    # HF-style rope_scaling dict ({"rope_type": "llama3", "factor": ..., ...}) or None for plain RoPE. Besides
    # transformers' types: "frequency_factors" ({"factors": [...]}: each frequency divided by its factor, as a
    # Llama 3 GGUF's rope_freqs.weight says).
    rope_scaling: dict | None = field(default=None, compare=False)
    attention_bias: bool = False  # Q/K/V projections add a bias (Qwen 2, qwen2_moe)
    # Per layer, how many positions back attention reaches (the token itself included); 0: every position.
    # Empty: no layer has a window.
    layer_windows: tuple[int, ...] = ()
    rope_theta_local: float = 0.0  # > 0: the rotary base of the sliding-window layers (Gemma 3)
    attention_scale: float = 0.0  # > 0: the scores' scale instead of head_dim ** -0.5 (Gemma 3)
    final_logit_softcap: float = 0.0  # > 0: logits = cap * tanh(logits / cap)
    # Mixture of experts: with num_experts > 0 every layer's MLP is a sparse block of num_experts SwiGLU
    # experts of moe_intermediate_size, experts_per_token of them chosen per token.
    num_experts: int = 0
    experts_per_token: int = 0
    moe_intermediate_size: int = 0
    norm_topk_prob: bool = True  # the chosen experts' weights renormalised to sum to 1
    shared_expert_intermediate_size: int = 0  # > 0: an always-on expert, gated by sigmoid(gate(x))

    def __post_init__(self):
        # A shape that crossed a socket as msgpack holds lists; equality and hashing want tuples.
        object.__setattr__(self, "layer_windows", tuple(int(w) for w in self.layer_windows))

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0

    def window_of(self, layer: int) -> int:
        """The attention window of ``layer``; 0: it attends to every earlier position."""
        return self.layer_windows[layer] if self.layer_windows else 0

    def kv_bytes_per_token(self, element_bytes: int) -> int:
        """K and V for every layer, of element_bytes each: what one cached token costs."""
        return 2 * self.num_layers * self.num_kv_heads * self.head_dim * element_bytes
