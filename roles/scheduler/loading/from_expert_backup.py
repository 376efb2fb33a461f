"""A model whose experts are mapped from the expert_backup's shared memory and whose other tensors are
converted from the checkpoint (without its experts)."""

from __future__ import annotations

from roles.model_files.model_shape import ModelShape
from roles.scheduler.loading.from_state import model_of_shard
from roles.scheduler.loading.weight_mode import runnable_weight_dtype
from roles.scheduler.models.llama import LlamaForCausalLM
from roles.shared_weights.client import SharedWeights
from roles.weight_format.execution_format import load_execution_weights


def load_backed_model(
    path: str, weight_dtype: str, backup: SharedWeights, expert_shard_for=None
) -> tuple[LlamaForCausalLM, ModelShape]:
    """backup: the experts as the backup holds them (this process's runnable format)."""
    weight_dtype = runnable_weight_dtype(weight_dtype)
    converted = load_execution_weights(path, weight_dtype, lambda shape: lambda layer: ())
    if converted.shape != backup.shape:
        raise ValueError(f"the expert_backup holds another model than {path}")
    shard = expert_shard_for(converted.shape) if expert_shard_for is not None else None
    model = model_of_shard(converted.shape, weight_dtype, {**converted.state, **backup.tensors}, shard)
    model.expert_segment = backup.segment  # the mapping lives as long as the model
    model.eos_token_ids = converted.eos_token_ids
    return model, converted.shape
