"""The scheduler's model around weights mapped from the weight_cache_daemon's shared memory: in auto a
NativeModel over numpy arrays of the mapping where the one-call step runs the whole file (no torch), else
the torch model around tensors of it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import zmq

from roles.model_files.model_shape import ModelShape
from roles.scheduler.loading.weight_mode import runnable_weight_dtype
from roles.shared_weights.client import map_shared_weights

if TYPE_CHECKING:
    from roles.scheduler.moe.shard_view import ShardFor


def load_shared_model(
    context: zmq.Context,
    address: str,
    model_path: str,
    weight_dtype: str,
    expert_shard_for: ShardFor | None = None,
) -> tuple[object, ModelShape]:
    """Ask for the mode this process can run (auto falls back to exact without the CPU kernels), build the
    model of the answered shape around the mapped weights: nothing read from disk or copied."""
    weight_dtype = runnable_weight_dtype(weight_dtype)
    shared = map_shared_weights(context, address, model_path, weight_dtype)
    model = None
    if weight_dtype == "auto" and expert_shard_for is None:
        from roles.scheduler.models.native_model import NativeModel

        arrays = shared.arrays()
        if arrays is not None:
            model = NativeModel.from_state(shared.shape, arrays, shared.eos_token_ids)
    if model is None:
        from roles.scheduler.loading.from_state import model_from_state

        model = model_from_state(shared.shape, weight_dtype, shared.tensors, expert_shard_for)
        model.eos_token_ids = shared.eos_token_ids
    model.weight_segment = shared.segment  # the mapping lives as long as the model
    return model, shared.shape
