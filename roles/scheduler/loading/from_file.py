"""A model read from its checkpoint: the file converted into the execution format, the model built from its
shape around those tensors (``from_state``).

``load_engine_model`` is what a scheduler serves: in ``auto`` the one-call kernel model (``NativeModel``,
no torch) wherever it can run the file, else the op-by-op torch model. ``load_model`` always builds the
torch model (``LlamaForCausalLM``), which tests and benchmarks hold against the other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from roles.model_files.model_shape import ModelShape
from roles.scheduler.loading.weight_mode import runnable_weight_dtype
from roles.weight_format.execution_format import as_tensors, load_execution_weights

if TYPE_CHECKING:
    from roles.scheduler.moe.shard_view import ShardFor, ShardView


def load_engine_model(path: str, weight_dtype: str = "exact", expert_shard_for: ShardFor | None = None):
    """(model, ModelShape) for a scheduler: a NativeModel where the one-call step runs the whole file (auto, no
    expert sharding), else ``load_model``'s torch model, converted once either way."""
    weight_dtype = runnable_weight_dtype(weight_dtype)
    if weight_dtype != "auto" or expert_shard_for is not None:
        return load_model(path, weight_dtype, expert_shard_for)
    from roles.scheduler.models.native_model import NativeModel

    converted = load_execution_weights(path, weight_dtype, arrays=True)
    model = NativeModel.from_state(converted.shape, converted.state, converted.eos_token_ids)
    if model is None:
        model = _torch_model(converted.shape, weight_dtype, as_tensors(converted.state), None)
        model.eos_token_ids = converted.eos_token_ids
    return model, converted.shape


def load_model(path: str, weight_dtype: str = "exact", expert_shard_for: ShardFor | None = None):
    """Resolve ``path`` (alias, .gguf or HF folder), convert its weights and build the torch model
    (``LlamaForCausalLM``) in eval mode."""
    weight_dtype = runnable_weight_dtype(weight_dtype)
    if expert_shard_for is None:
        converted = load_execution_weights(path, weight_dtype)
        model = _torch_model(converted.shape, weight_dtype, converted.state, None)
    else:  # convert only this rank's experts
        shards: list[ShardView] = []

        def select_experts(shape: ModelShape):
            shards.append(expert_shard_for(shape))
            return shards[0].experts_of_layer

        converted = load_execution_weights(path, weight_dtype, select_experts)
        model = _torch_model(converted.shape, weight_dtype, converted.state, shards[0])
    model.eos_token_ids = converted.eos_token_ids
    return model, converted.shape


def _torch_model(shape: ModelShape, weight_dtype: str, state: dict, shard: ShardView | None):
    from roles.scheduler.loading.from_state import model_of_shard

    return model_of_shard(shape, weight_dtype, state, shard)
