"""The feed-forward tensors of one decoder layer in the execution format, by state name under the layer:

    gate_up_proj.<leaves>, down_proj.<leaves>       a SwiGLU MLP (gate|up stacked): the dense layers, each
                                                    expert and the shared expert alike
    moe.router                                      float32 (experts, hidden), in every mode: the routing
                                                    decision is taken on it
    moe.experts.<e>.gate_up_proj.<leaves>, moe.experts.<e>.down_proj.<leaves>
    moe.shared_expert.<SwiGLU leaves>, moe.shared_expert_gate (1, hidden) float32     qwen2_moe only

The experts' linears are converted like every other linear (``linear_tensors``), so each weight mode
(exact, auto's float32, int8, int4) applies to them as is.
"""

from __future__ import annotations

from collections.abc import Collection

import torch

from roles.model_files.model_shape import ModelShape
from roles.weight_format.linear_tensors import linear_tensors
from roles.weight_format.weight_sources import WeightSource

# family -> (the sparse block's prefix in the layer, the experts' gate, up and down weight names)
_MOE_NAMES = {
    "mixtral": ("block_sparse_moe.", "w1", "w3", "w2"),
    "qwen2_moe": ("mlp.", "gate_proj", "up_proj", "down_proj"),
}


def swiglu_tensors(weights: WeightSource, gate: str, up: str, down: str, weight_dtype: str) -> dict:
    """gate_up_proj (the gate and up weights stacked) and down_proj, from the three weights' full names."""
    tensors = {f"gate_up_proj.{k}": v for k, v in linear_tensors(weights, [gate, up], weight_dtype).items()}
    tensors.update({f"down_proj.{k}": v for k, v in linear_tensors(weights, [down], weight_dtype).items()})
    return tensors


def _prefixed(prefix: str, tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {prefix + name: tensor for name, tensor in tensors.items()}


def _moe_tensors(
    shape: ModelShape, weights: WeightSource, layer: str, weight_dtype: str, experts: Collection[int] | None
) -> dict:
    block, gate, up, down = _MOE_NAMES[shape.architecture]
    block = layer + block
    state = {"moe.router": weights.float_tensor(block + "gate.weight").contiguous()}
    for expert in range(shape.num_experts) if experts is None else sorted(experts):
        names = [f"{block}experts.{expert}.{leaf}.weight" for leaf in (gate, up, down)]
        state.update(_prefixed(f"moe.experts.{expert}.", swiglu_tensors(weights, *names, weight_dtype)))
    if shape.shared_expert_intermediate_size:
        names = [f"{block}shared_expert.{leaf}.weight" for leaf in ("gate_proj", "up_proj", "down_proj")]
        state.update(_prefixed("moe.shared_expert.", swiglu_tensors(weights, *names, weight_dtype)))
        state["moe.shared_expert_gate"] = weights.float_tensor(
            block + "shared_expert_gate.weight"
        ).contiguous()
    return state


def mlp_tensors(
    shape: ModelShape,
    weights: WeightSource,
    layer: str,
    weight_dtype: str,
    experts: Collection[int] | None = None,
) -> dict:
    """The feed-forward tensors of the layer whose HF names start with ``layer`` ("model.layers.3.");
    experts: only those of a mixture (None: every one)."""
    if shape.is_moe:
        return _moe_tensors(shape, weights, layer, weight_dtype, experts)
    names = [f"{layer}mlp.{leaf}.weight" for leaf in ("gate_proj", "up_proj", "down_proj")]
    return swiglu_tensors(weights, *names, weight_dtype)
