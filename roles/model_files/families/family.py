"""What a model family is to roleserve: the few ways its decoder differs from Llama's, and where its numbers are.

Every family is the same decoder (``roles.scheduler.models.llama``): RMSNorm, rotary attention over the paged
KV cache, a gated MLP or a mixture of experts. A family file states only what differs, as switches, plus the
functions that read its particular hyper-parameters from a Hugging Face config.json and from the metadata
llama.cpp's converter writes into a GGUF (``<arch>.attention.sliding_window``, ...). The switches are fixed by
the family; the numbers (windows, rope bases, ...) are read per checkpoint into its ModelShape.

Nothing here imports torch: the launcher reads shapes before anything starts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# The HF-style names of one decoder layer's tensors, under "model.layers.<i>.", for the unfused families.
LLAMA_LAYER_NAMES = {
    "q": "self_attn.q_proj",
    "k": "self_attn.k_proj",
    "v": "self_attn.v_proj",
    "o": "self_attn.o_proj",
    "gate": "mlp.gate_proj",
    "up": "mlp.up_proj",
    "down": "mlp.down_proj",
    "input_norm": "input_layernorm",
    "ffn_norm": "post_attention_layernorm",  # Llama's norm before the feed-forward
}


@dataclass(frozen=True)
class MoeNames:
    """Where a mixture's tensors sit under the layer: the block's prefix, the router, the experts' weights."""

    block: str  # "block_sparse_moe." (Mixtral) or "mlp." (Qwen MoE)
    gate: str  # each expert's gate, up and down weight leaf names
    up: str
    down: str


@dataclass(frozen=True)
class Family:
    """A family's switches and readers. ``name`` is ModelShape.architecture."""

    name: str
    hf_architectures: tuple[str, ...]  # config.json "architectures"
    hf_model_types: tuple[str, ...]  # config.json "model_type"
    gguf_architecture: str | None  # general.architecture llama.cpp's converter writes (None: read as HF only)
    description: str  # one line for docs and inspect
    # --- what the decoder does differently -------------------------------------------------------------
    qk_norm: bool = False  # RMSNorm over each head of Q and K before the rotation (Qwen 3, Gemma 3)
    sandwich_norms: bool = False  # norms on the attention's and the feed-forward's outputs too (Gemma 3)
    norm_offset: float = 0.0  # a checkpoint's norm weights w act as (offset + w) (Gemma: 1.0)
    activation: str = "silu"  # the gated MLP's activation: "silu" or "gelu_tanh"
    scale_embeddings: bool = False  # embeddings multiplied by sqrt(hidden size) (Gemma)
    # --- where its tensors are ----------------------------------------------------------------------------
    fused_qkv: bool = False  # one self_attn.qkv_proj and one mlp.gate_up_proj (Phi-3)
    moe: MoeNames | None = None  # a mixture of experts in every layer
    gguf_rope_permuted: bool = False  # llama.cpp's converter interleaves Q/K rows (the "llama" rope layout)
    gguf_layer_names: dict[str, str] = field(default_factory=dict)  # GGUF layer tensor -> HF name, overrides
    hf_layer_names: dict[str, str] = field(default_factory=dict)  # overrides of LLAMA_LAYER_NAMES
    # --- its numbers ------------------------------------------------------------------------------------
    # (config, where) -> ModelShape fields of this family's own; may raise ModelFileError
    read_hf: Callable[[dict, str], dict[str, Any]] = lambda config, where: {}
    # (GGUF checkpoint) -> ModelShape fields of this family's own
    read_gguf: Callable[[Any], dict[str, Any]] = lambda checkpoint: {}

    def hf_layer_name(self, key: str) -> str:
        """The HF name, under "model.layers.<i>.", of the layer tensor ``key`` names (LLAMA_LAYER_NAMES' keys,
        plus "qkv" / "gate_up" for fused families and the sandwich norms)."""
        return self.hf_layer_names.get(key) or LLAMA_LAYER_NAMES[key]
