"""Checks `parallel.ep_size` against the model before anything starts: the model must have experts, and
as many per layer as the ranks can share evenly (its header is read, as the derivations do)."""

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
    return None


EP_SIZE_FITS_THE_MODEL = Constraint(
    ("parallel.ep_size", "model.path"),
    lambda values: ep_size_problem(values) is None,
    lambda values: str(ep_size_problem(values)),
)
