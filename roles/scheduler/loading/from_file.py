"""A model read from its checkpoint: the file converted into the execution format, the model built from its
shape around those tensors (``from_state``)."""

from __future__ import annotations

from roles.model_files.model_shape import ModelShape
from roles.scheduler.loading.from_state import model_of_shard
from roles.scheduler.loading.weight_mode import runnable_weight_dtype
from roles.scheduler.models.llama import LlamaForCausalLM
from roles.scheduler.moe.shard_view import ShardFor, ShardView
from roles.weight_format.execution_format import load_execution_weights


def load_model(
    path: str,
    weight_dtype: str = "exact",
    expert_shard_for: ShardFor | None = None,
) -> tuple[LlamaForCausalLM, ModelShape]:
    """Resolve ``path`` (alias, .gguf or HF folder), convert its weights and build the model in eval mode."""
    weight_dtype = runnable_weight_dtype(weight_dtype)
    if expert_shard_for is None:
        converted = load_execution_weights(path, weight_dtype)
        model = model_of_shard(converted.shape, weight_dtype, converted.state, None)
    else:  # convert only this rank's experts
        shards: list[ShardView] = []

        def select_experts(shape: ModelShape):
            shards.append(expert_shard_for(shape))
            return shards[0].experts_of_layer

        converted = load_execution_weights(path, weight_dtype, select_experts)
        model = model_of_shard(converted.shape, weight_dtype, converted.state, shards[0])
    model.eos_token_ids = converted.eos_token_ids
    return model, converted.shape
