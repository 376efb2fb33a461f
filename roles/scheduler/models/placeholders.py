"""Placeholders for a model's tensors: modules are built from the shape alone, then loading fills them in
(``roles.scheduler.loading.state.load_state``)."""

from __future__ import annotations

import torch


def meta(shape: tuple[int, ...], dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """A placeholder: made directly on the meta device, not under a ``torch.device("meta")`` context,
    whose function mode imports torch._dynamo on first use (2.5 s of a scheduler's start-up)."""
    return torch.empty(shape, dtype=dtype, device="meta")
