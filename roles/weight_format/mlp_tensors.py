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

from roles.model_files.families.family import Family
from roles.model_files.model_shape import ModelShape
from roles.weight_format.linear_tensors import linear_tensors
from roles.weight_format.weight_sources import WeightSource


def swiglu_tensors(weights: WeightSource, gate: str, up: str, down: str, weight_dtype: str) -> dict:
    """gate_up_proj (the gate and up weights stacked) and down_proj, from the three weights' full names."""
    tensors = prefixed("gate_up_proj.", linear_tensors(weights, [gate, up], weight_dtype))
    return {**tensors, **prefixed("down_proj.", linear_tensors(weights, [down], weight_dtype))}


def prefixed(prefix: str, tensors: dict) -> dict:
    """``tensors`` with ``prefix`` before each name (a module's state under its attribute)."""
    return {prefix + name: tensor for name, tensor in tensors.items()}


def _moe_tensors(
    shape: ModelShape,
    family: Family,
    weights: WeightSource,
    layer: str,
    weight_dtype: str,
    experts: Collection[int] | None,
) -> dict:
    names = family.moe
    block, gate, up, down = layer + names.block, names.gate, names.up, names.down
    state = {"moe.router": weights.float_tensor(block + "gate.weight").contiguous()}
    for expert in range(shape.num_experts) if experts is None else sorted(experts):
        names = [f"{block}experts.{expert}.{leaf}.weight" for leaf in (gate, up, down)]
        state.update(prefixed(f"moe.experts.{expert}.", swiglu_tensors(weights, *names, weight_dtype)))
    if shape.shared_expert_intermediate_size:
        names = [f"{block}shared_expert.{leaf}.weight" for leaf in ("gate_proj", "up_proj", "down_proj")]
        state.update(prefixed("moe.shared_expert.", swiglu_tensors(weights, *names, weight_dtype)))
        gate_weight = weights.float_tensor(block + "shared_expert_gate.weight")
        state["moe.shared_expert_gate"] = gate_weight.reshape(1, -1).contiguous()  # a GGUF stores (hidden,)
    return state


def mlp_tensors(
    shape: ModelShape,
    family: Family,
    weights: WeightSource,
    layer: str,
    weight_dtype: str,
    experts: Collection[int] | None = None,
) -> dict:
    """The feed-forward tensors of the layer whose HF names start with ``layer`` ("model.layers.3.");
    experts: only those of a mixture (None: every one)."""
    if shape.is_moe:
        return _moe_tensors(shape, family, weights, layer, weight_dtype, experts)
    down = f"{layer}{family.hf_layer_name('down')}.weight"
    if family.fused_qkv:  # gate|up already one weight
        gate_up = [f"{layer}{family.hf_layer_name('gate_up')}.weight"]
        tensors = prefixed("gate_up_proj.", linear_tensors(weights, gate_up, weight_dtype))
        return {**tensors, **prefixed("down_proj.", linear_tensors(weights, [down], weight_dtype))}
    gate, up = (f"{layer}{family.hf_layer_name(key)}.weight" for key in ("gate", "up"))
    return swiglu_tensors(weights, gate, up, down, weight_dtype)
