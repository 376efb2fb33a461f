"""A model the one-call kernel step runs whole (``exec.weight_dtype: auto``, Llama's layer: see
``NativeDecodePlan.supports``), built straight from the execution state's numpy arrays: the file's blocks,
its norms and biases. No torch and no modules: a scheduler serving it never imports torch.

It has what ``NativeDecodePlan`` reads of a model (shape, family, layers with their norms and kernel linears,
embedding, head, final norm, rotary frequencies) and what the engine asks of one (``forward``,
``eos_token_ids``, ``modules``).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from roles.model_files.families.registry import family_named
from roles.model_files.model_shape import ModelShape
from roles.model_files.tensor_types import BY_NAME
from roles.scheduler.kernels import native
from roles.scheduler.kv_cache.paged_kv import KVCache
from roles.scheduler.models.kernel_linear import KernelLinear, takes_int8_inputs
from roles.scheduler.models.native_decode import NativeDecodePlan
from roles.scheduler.models.rope_frequencies import rope_inverse_frequencies
from roles.scheduler.sched.forward_batch import ForwardBatch

_F32 = BY_NAME["F32"].type_id


def _kernel_linear(state: dict, prefix: str, in_features: int) -> KernelLinear | None:
    """The linear whose tensors ``state`` holds under ``prefix``: its blocks, or a float32 weight the kernels
    take as one F32 part; None when it has neither or the kernels cannot run it (a float32 weight whose
    width is not a multiple of 32)."""
    types = state.get(prefix + "block_types")
    if types is not None:
        parts = [state[f"{prefix}blocks_{index}"] for index in range(len(types))]
        return KernelLinear(in_features, np.asarray(types).tolist(), parts, takes_int8_inputs(prefix))
    weight = state.get(prefix + "weight")
    if weight is None or in_features % native.GROUP:
        return None
    rows = np.ascontiguousarray(np.asarray(weight, dtype=np.float32)).view(np.uint8)
    return KernelLinear(in_features, [_F32], [rows], takes_int8_inputs(prefix))


class NativeLayer:
    def __init__(self, state: dict, index: int, hidden: int, intermediate: int, q_size: int):
        prefix = f"layers.{index}."
        self.input_norm = state[prefix + "input_norm"]
        self.post_attention_norm = state[prefix + "post_attention_norm"]
        self.qkv_bias = state.get(prefix + "qkv_bias")
        self.q_norm = state.get(prefix + "q_norm")
        self.k_norm = state.get(prefix + "k_norm")
        self.qkv_proj = _kernel_linear(state, prefix + "qkv_proj.", hidden)
        self.o_proj = _kernel_linear(state, prefix + "o_proj.", q_size)
        self.gate_up_proj = _kernel_linear(state, prefix + "gate_up_proj.", hidden)
        self.down_proj = _kernel_linear(state, prefix + "down_proj.", intermediate)

    def linears(self) -> list[KernelLinear | None]:
        return [self.qkv_proj, self.o_proj, self.gate_up_proj, self.down_proj]


class NativeModel:
    weight_dtype = "auto"
    expert_shard = None  # every expert is local: a dense model has none

    def __init__(self, shape: ModelShape, state: dict, eos_token_ids: list[int]):
        self.shape = shape
        self.family = family_named(shape.architecture)
        self.eos_token_ids = list(eos_token_ids)
        hidden, q_size = shape.hidden_size, shape.num_heads * shape.head_dim
        self.layers = [
            NativeLayer(state, index, hidden, shape.intermediate_size, q_size)
            for index in range(shape.num_layers)
        ]
        self.embedding = _kernel_linear(state, "embedding.", hidden)
        self.lm_head = _kernel_linear(state, "lm_head.", hidden)  # None: tied to the embedding, or no view
        self.norm = state["norm"]
        self.rotary = SimpleNamespace(
            inv_freq=rope_inverse_frequencies(shape.head_dim, shape.rope_theta, shape.rope_scaling)
        )
        self._plan: NativeDecodePlan | None = None

    @classmethod
    def from_state(cls, shape: ModelShape, state: dict, eos_token_ids: list[int]) -> NativeModel | None:
        """The model, or None when the one-call step cannot run it all (another layer than Llama's, or a
        weight without a kernel view): then the op-by-op torch model serves it."""
        if shape.is_moe or native.unavailable_reason() is not None:
            return None
        model = cls(shape, state, eos_token_ids)
        has_head = model.lm_head is not None or not any(name.startswith("lm_head.") for name in state)
        if not has_head or not NativeDecodePlan.supports(model):
            return None
        return model

    def linears(self) -> list[KernelLinear]:
        """Every linear of the model, the embedding and head included."""
        linears = [self.embedding] + ([] if self.lm_head is None else [self.lm_head])
        for layer in self.layers:
            linears += layer.linears()
        return linears

    def modules(self) -> tuple:
        """No module of this model routes experts (the engine's expert statistics ask)."""
        return ()

    def forward(self, batch: ForwardBatch, kv: KVCache) -> np.ndarray:
        """Logits (len(batch.logits_indices), vocab) float32: the whole step in the kernels."""
        if self._plan is None:  # once the weights' views exist (packed when integer activations are on)
            self._plan = NativeDecodePlan(self)
        return self._plan.forward(batch, kv)
