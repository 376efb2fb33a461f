"""The scheduler's model around weights mapped from the weight_cache_daemon's shared memory."""

from __future__ import annotations

from typing import TYPE_CHECKING

import zmq

from roles.model_files.model_shape import ModelShape
from roles.scheduler.loading.from_state import model_from_state
from roles.scheduler.loading.weight_mode import runnable_weight_dtype
from roles.scheduler.models.llama import LlamaForCausalLM
from roles.shared_weights.client import map_shared_weights

if TYPE_CHECKING:
    from roles.scheduler.moe.shard_view import ShardFor


def load_shared_model(
    context: zmq.Context,
    address: str,
    model_path: str,
    weight_dtype: str,
    expert_shard_for: ShardFor | None = None,
) -> tuple[LlamaForCausalLM, ModelShape]:
    """Ask for the mode this process can run (auto falls back to exact without the CPU kernels), build the
    model of the answered shape and load the mapped tensors into it: nothing read from disk or copied."""
    weight_dtype = runnable_weight_dtype(weight_dtype)
    shared = map_shared_weights(context, address, model_path, weight_dtype)
    model = model_from_state(shared.shape, weight_dtype, shared.tensors, expert_shard_for)
    model.weight_segment = shared.segment  # the mapping lives as long as the model
    model.eos_token_ids = shared.eos_token_ids
    return model, shared.shape
