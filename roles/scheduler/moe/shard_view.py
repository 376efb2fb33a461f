"""What the model needs of an expert-parallel rank's share of the experts, as a Protocol: the models type
against it and ``roles.scheduler.expert_parallel.shard.ExpertShard`` provides it, so the models never import
expert parallelism (which imports the models' experts to rebalance them)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import torch
from torch import nn

from roles.model_files.model_shape import ModelShape
from roles.scheduler.moe.placement import ExpertPlacement


class ExchangeView(Protocol):
    """One MoE layer's exchange of tokens with the ranks holding their experts."""

    placement: ExpertPlacement

    def slots_for(self, expert_ids: torch.Tensor) -> torch.Tensor: ...

    def run(
        self, hidden: torch.Tensor, weights: torch.Tensor, slots: torch.Tensor, experts: nn.ModuleList
    ) -> torch.Tensor: ...


class ShardView(Protocol):
    @property
    def placement(self) -> ExpertPlacement: ...

    def exchange(self, layer: int) -> ExchangeView: ...

    def local_state(self, state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]: ...


# Given the model's shape: this rank's shard (known once the shape is read).
ShardFor = Callable[[ModelShape], ShardView]
