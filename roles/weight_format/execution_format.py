"""A checkpoint converted into the execution format: every tensor of the scheduler's model, by state name.

    embedding.<linear leaves>      auto: the embedding table in the file's format (lookups and tied head)
    embed_tokens                   other modes: float32 (vocab, hidden)
    layers.<i>.input_norm, layers.<i>.post_attention_norm (before the feed-forward)   float32 (hidden,)
    layers.<i>.attn_output_norm, layers.<i>.ffn_output_norm   float32 (hidden,), families with sandwich norms
    layers.<i>.q_norm, layers.<i>.k_norm                      float32 (head_dim,), families with Q/K norms
    layers.<i>.qkv_proj.<leaves>   Q|K|V stacked;  layers.<i>.o_proj.<leaves>
    layers.<i>.qkv_bias            float32 (q + 2 kv,), only when the family has Q/K/V biases (Qwen 2)
    layers.<i>.<feed-forward>      a SwiGLU MLP or a mixture of experts: ``mlp_tensors``
    norm                           float32 (hidden,)
    lm_head.<leaves>               only when the head is not the embedding table reused as is

Linear leaves and kinds: ``linear_tensors``. The scheduler builds its model from the ModelShape and loads
these tensors into it; the weight_cache_daemon shares them without building any module. Norm weights are
stored as the multiplier the decoder applies: a Gemma folder's w becomes 1 + w here (its GGUF has it so).

The state is built of numpy arrays where no torch is needed: every float32 vector and table read as is, and
in ``auto`` the file's blocks as views of its map; the linears of the other modes (and an ``auto`` weight the
kernels cannot run) are converted in torch.
``load_execution_weights`` hands every value over as a torch tensor (no copy) unless asked for the arrays,
which the one-call kernel step (``NativeModel``) runs without importing torch.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Collection
from dataclasses import dataclass

import numpy as np

from roles.model_files.checkpoint import open_checkpoint
from roles.model_files.families.registry import family_named
from roles.model_files.gguf_checkpoint import GGUFCheckpoint
from roles.model_files.model_shape import ModelShape
from roles.weight_format.linear_tensors import linear_tensors
from roles.weight_format.mlp_tensors import mlp_tensors, prefixed
from roles.weight_format.weight_sources import GGUFWeights, HFWeights, WeightSource, as_weight_source
from runtime_context.settings import SETTINGS

EMBEDDING = "model.embed_tokens.weight"


@dataclass
class ExecutionWeights:
    shape: ModelShape
    state: dict  # name -> torch tensor, or (arrays=True) the numpy array the state holds where it has one
    eos_token_ids: list[int]


def _float(weights: WeightSource, name: str) -> np.ndarray:
    return np.ascontiguousarray(weights.float_array(name))


def as_tensors(state: dict) -> dict:
    """Every numpy value of ``state`` as a torch tensor over the same memory (the file's map is read-only, and
    nothing writes the weights)."""
    import torch

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
        return {
            name: torch.from_numpy(value) if isinstance(value, np.ndarray) else value
            for name, value in state.items()
        }


def _head(shape: ModelShape, weights: WeightSource, weight_dtype: str) -> dict:
    """The vocabulary projection's tensors; none when auto or exact reuse the embedding table (tied)."""
    name = "lm_head.weight"
    if shape.tie_word_embeddings or not weights.has(name):
        name = EMBEDDING
    if weight_dtype in ("auto", "exact"):
        return {} if name == EMBEDDING else linear_tensors(weights, [name], weight_dtype)
    # int8 and int4 keep the head at 8 bits: GGUFs keep it at 8 bits or more (Q8_0 here), and int4 would
    # add error the file itself does not have.
    return linear_tensors(weights, [name], "int8", prefer_raw=False)


# Given the model's shape: which experts of each MoE layer to convert (a function of the layer index), or
# None for every expert. An expert-parallel rank converts only its own.
ExpertSelection = Callable[[ModelShape], Callable[[int], Collection[int]] | None]


def execution_state(
    shape: ModelShape,
    weights,
    weight_dtype: str,
    experts_of_layer: Callable[[int], Collection[int]] | None = None,
) -> dict:
    """Every tensor of the model in ``weight_dtype``'s format, from HF-named weights (dict or WeightSource);
    of a mixture's experts, only ``experts_of_layer(layer)`` when given; numpy arrays where no torch is needed
    (module docstring)."""
    choices = SETTINGS["exec.weight_dtype"].choices
    if weight_dtype not in choices:
        raise ValueError(f"weight_dtype {weight_dtype!r} is not one of {choices} (exec.weight_dtype)")
    weights = as_weight_source(weights)
    state: dict = {}

    def put(prefix: str, tensors: dict) -> None:
        state.update({prefix + leaf: tensor for leaf, tensor in tensors.items()})

    family = family_named(shape.architecture)
    shift = family.norm_offset if weights.shifts_norms else 0.0

    def norm(name: str) -> np.ndarray:
        return _float(weights, name) + shift if shift else _float(weights, name)

    if weight_dtype == "auto":
        put("embedding.", linear_tensors(weights, [EMBEDDING], "auto"))
    else:
        state["embed_tokens"] = _float(weights, EMBEDDING)
    for index in range(shape.num_layers):
        experts = None if experts_of_layer is None else experts_of_layer(index)
        put(f"layers.{index}.", _layer_state(shape, family, weights, index, weight_dtype, norm, experts))
    state["norm"] = norm("model.norm.weight")
    put("lm_head.", _head(shape, weights, weight_dtype))
    return state


def _layer_state(shape, family, weights, index, weight_dtype, norm, experts) -> dict:
    """One decoder layer's tensors, named as the module under "layers.<index>." holds them."""
    source = f"model.layers.{index}."

    def named(key: str) -> str:
        return source + family.hf_layer_name(key)

    state = {
        "input_norm": norm(named("input_norm") + ".weight"),
        "post_attention_norm": norm(named("ffn_norm") + ".weight"),
    }
    if family.sandwich_norms:
        state["attn_output_norm"] = norm(named("attn_output_norm") + ".weight")
        state["ffn_output_norm"] = norm(named("ffn_output_norm") + ".weight")
    if family.qk_norm:
        state["q_norm"] = norm(source + "self_attn.q_norm.weight")
        state["k_norm"] = norm(source + "self_attn.k_norm.weight")
    qkv = [named("qkv")] if family.fused_qkv else [named("q"), named("k"), named("v")]
    state.update(
        prefixed("qkv_proj.", linear_tensors(weights, [name + ".weight" for name in qkv], weight_dtype))
    )
    if shape.attention_bias:
        state["qkv_bias"] = np.concatenate([_float(weights, named(key) + ".bias") for key in ("q", "k", "v")])
    state.update(prefixed("o_proj.", linear_tensors(weights, [named("o") + ".weight"], weight_dtype)))
    state.update(mlp_tensors(shape, family, weights, source, weight_dtype, experts))
    return state


def load_execution_weights(
    path: str, weight_dtype: str, select_experts: ExpertSelection | None = None, arrays: bool = False
) -> ExecutionWeights:
    """Open the checkpoint at ``path`` once and convert it: shape, tensors and eos ids. ``arrays``: the state
    as built (numpy arrays in auto), else every value a torch tensor."""
    checkpoint = open_checkpoint(path)
    if isinstance(checkpoint, GGUFCheckpoint):
        weights: WeightSource = GGUFWeights(checkpoint)
    else:
        weights = HFWeights(checkpoint)
    shape = checkpoint.shape()
    experts_of_layer = None if select_experts is None else select_experts(shape)
    state = execution_state(shape, weights, weight_dtype, experts_of_layer)
    return ExecutionWeights(shape, state if arrays else as_tensors(state), checkpoint.eos_token_ids())
