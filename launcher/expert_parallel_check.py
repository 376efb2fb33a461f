"""Checks expert parallelism and the expert_backup against the model before anything starts (its header is
read, as the derivations do): the model must have experts, as many per layer (with the redundant slots) as
the ranks can share evenly, and the backup must fit in expert_backup.max_memory_mb."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from launcher.derivations import read_model_shape
from runtime_context.constraints import Constraint
from runtime_context.derivation import DerivationFailed


def ep_size_problem(values: Mapping[str, Any]) -> str | None:
    ep_size = values["parallel.ep_size"]
    if ep_size == 1:
        return None
    try:
        shape = read_model_shape(values["model.path"])
    except DerivationFailed:
        return None  # an unreadable model is reported where it is loaded, with its own reason
    if not shape.is_moe:
        return f"must be 1 for {values['model.path']!r}: a dense model has no experts to split; got {ep_size}"
    if shape.num_experts % ep_size:
        return (
            f"must divide the model's {shape.num_experts} experts per layer evenly "
            f"(each rank holds num_experts / ep_size); got {ep_size}"
        )
    slots = shape.num_experts + values["exec.moe.num_redundant_experts"]
    if slots % ep_size:
        return (
            f"must divide the {slots} expert slots per layer (the model's {shape.num_experts} experts + "
            f"exec.moe.num_redundant_experts) evenly; got {ep_size}"
        )
    return None


# Bytes per expert weight in each execution format (int8 / int4 add a scale per row, counted as 5%).
_BYTES_PER_WEIGHT = {"exact": 4.0, "int8": 1.05, "int4": 0.55}


def expert_backup_problem(values: Mapping[str, Any]) -> str | None:
    if not values["expert_backup.enabled"]:
        return None
    try:
        shape = read_model_shape(values["model.path"])
    except DerivationFailed:
        return None
    if not shape.is_moe:
        return f"needs an MoE model: {values['model.path']!r} is dense and has no experts to back up"
    weight_dtype = values["exec.weight_dtype"]
    per_weight = _BYTES_PER_WEIGHT.get(weight_dtype)
    if per_weight is None:  # auto keeps the file's own blocks: known once they are read
        return None
    weights = shape.num_layers * shape.num_experts * 3 * shape.hidden_size * shape.moe_intermediate_size
    needed_mb = int(weights * per_weight / 2**20) + 1
    if needed_mb > values["expert_backup.max_memory_mb"]:
        return (
            f"the model's experts need about {needed_mb} MiB in exec.weight_dtype={weight_dtype}; "
            f"expert_backup.max_memory_mb is {values['expert_backup.max_memory_mb']}"
        )
    return None


EP_SIZE_FITS_THE_MODEL = Constraint(
    ("parallel.ep_size", "model.path"),
    lambda values: ep_size_problem(values) is None,
    lambda values: str(ep_size_problem(values)),
)


EXPERT_BACKUP_FITS = Constraint(
    ("expert_backup.enabled", "model.path", "expert_backup.max_memory_mb"),
    lambda values: expert_backup_problem(values) is None,
    lambda values: str(expert_backup_problem(values)),
)
