"""The architecture numbers of a Llama-family checkpoint, read from its file (GGUF metadata or config.json)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ModelShape:
    """Everything the model code and the KV cache need to know about a checkpoint's shape."""

    architecture: str  # "llama" is the one supported family
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

    @property
    def kv_bytes_per_token(self) -> int:
        """float32 K and V for every layer: what one cached token costs."""
        return 2 * self.num_layers * self.num_kv_heads * self.head_dim * 4
