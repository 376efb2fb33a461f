"""What one expert-parallel rank holds: its slots of every MoE layer, and how it reaches the others."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

import torch

from roles.model_files.model_shape import ModelShape
from roles.scheduler.expert_parallel.exchange import ExpertExchange
from roles.scheduler.expert_parallel.group import ExpertParallelGroup
from roles.scheduler.moe.placement import ExpertPlacement
from roles.scheduler.moe.shard_view import ShardFor

_EXPERT_TENSOR = re.compile(r"layers\.(\d+)\.moe\.experts\.(\d+)\.(.+)")


@dataclass(frozen=True)
class ExpertShard:
    group: ExpertParallelGroup
    placement: ExpertPlacement

    def __post_init__(self) -> None:
        if self.placement.num_ranks != self.group.size:
            raise ValueError(
                f"the placement spreads experts over {self.placement.num_ranks} ranks; the group has {self.group.size}"
            )

    @property
    def rank(self) -> int:
        return self.group.rank

    def experts_of_layer(self, layer: int) -> set[int]:
        """The logical experts this rank holds in ``layer``."""
        return set(self.placement.logical_on_rank(layer, self.rank))

    def exchange(self, layer: int) -> ExpertExchange:
        return ExpertExchange(self.group, self.placement, layer)

    def local_state(self, state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """The converted state with only this rank's experts, each renamed to its local slot
        (``layers.L.moe.experts.<slot on this rank>.…``); a replicated expert is the same tensor under each
        of its slots (no copy). Every other tensor is kept as it is."""
        by_layer: dict[int, dict[int, list[int]]] = {}
        for layer in range(self.placement.num_layers):
            local: dict[int, list[int]] = {}
            for slot, logical in enumerate(self.placement.logical_on_rank(layer, self.rank)):
                local.setdefault(logical, []).append(slot)
            by_layer[layer] = local
        out = {}
        for name, tensor in state.items():
            match = _EXPERT_TENSOR.fullmatch(name)
            if match is None:
                out[name] = tensor
                continue
            layer, logical, leaf = int(match[1]), int(match[2]), match[3]
            for slot in by_layer[layer].get(logical, ()):
                out[f"layers.{layer}.moe.experts.{slot}.{leaf}"] = tensor
        return out


def current_shard_for(group: ExpertParallelGroup, placement_path: str) -> ShardFor:
    """The placement the ranks run now: the one the last rebalance saved (a restarted rank joins ranks
    that rebalanced), else the starting one, experts split in order with no replicas. A model that cannot
    be split so is a ValueError naming the setting."""

    def shard_for(shape: ModelShape) -> ExpertShard:
        if not shape.is_moe:
            raise ValueError("the model has no experts (a dense model): parallel.ep_size must be 1")
        if shape.num_experts % group.size:
            raise ValueError(
                f"the model's {shape.num_experts} experts cannot be split evenly over "
                f"parallel.ep_size={group.size} ranks"
            )
        if os.path.exists(placement_path):
            return ExpertShard(group, ExpertPlacement(torch.load(placement_path), group.size))
        placement = ExpertPlacement.contiguous(shape.num_layers, shape.num_experts, group.size)
        return ExpertShard(group, placement)

    return shard_for


def save_placement(placement: ExpertPlacement, path: str) -> None:
    """Atomically, so a rank starting meanwhile reads the old placement or the new one, never half."""
    partial = f"{path}.partial"
    torch.save(placement.physical_to_logical, partial)
    os.replace(partial, path)
