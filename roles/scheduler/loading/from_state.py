"""The model built from its shape around converted tensors (no copy): read from the checkpoint, or mapped from
the weight cache's or the expert_backup's shared memory."""

from __future__ import annotations

import torch

from roles.model_files.model_shape import ModelShape
from roles.scheduler.loading.state import load_state
from roles.scheduler.models.llama import LlamaForCausalLM
from roles.scheduler.moe.shard_view import ShardFor, ShardView


def model_from_state(
    shape: ModelShape,
    weight_dtype: str,
    state: dict[str, torch.Tensor],
    expert_shard_for: ShardFor | None = None,
) -> LlamaForCausalLM:
    """The model of ``shape`` holding the state's tensors themselves (no copy): read from the checkpoint, or
    mapped from the weight cache's shared memory. ``expert_shard_for(shape)``: this expert-parallel rank's
    share of the experts; the model then holds only those (``model.expert_shard``)."""
    shard = expert_shard_for(shape) if expert_shard_for is not None else None
    return model_of_shard(shape, weight_dtype, state, shard)


def model_of_shard(
    shape: ModelShape, weight_dtype: str, state: dict[str, torch.Tensor], shard: ShardView | None
) -> LlamaForCausalLM:
    """model_from_state once the rank's shard is known (None: every expert)."""
    if shard is not None:
        state = shard.local_state(state)
    model = LlamaForCausalLM(shape, state, weight_dtype, shard)
    model.expert_shard = shard
    load_state(model, state)
    return model.eval()
