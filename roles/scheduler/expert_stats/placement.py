"""Where experts live: a logical-to-physical map over expert-parallel ranks.

Each MoE layer has `num_logical` experts. Physical slots are numbered rank by rank, `slots_per_rank` on each
rank; a logical expert may occupy several slots (a replica of a hot expert). Without replication and with
one rank, physical slot i holds logical expert i.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class ExpertPlacement:
    physical_to_logical: torch.Tensor  # [layers, physical slots] int64: the logical expert each slot holds
    num_ranks: int

    def __post_init__(self) -> None:
        layers, slots = self.physical_to_logical.shape
        if self.num_ranks < 1 or slots % self.num_ranks:
            raise ValueError(
                f"{slots} physical expert slots cannot be split evenly over {self.num_ranks} ranks"
            )

    @classmethod
    def contiguous(cls, num_layers: int, num_experts: int, num_ranks: int = 1) -> ExpertPlacement:
        """Expert e on rank e // (num_experts / num_ranks), no replicas: the starting placement."""
        slots = torch.arange(num_experts, dtype=torch.int64).repeat(num_layers, 1)
        return cls(slots, num_ranks)

    @property
    def num_layers(self) -> int:
        return self.physical_to_logical.shape[0]

    @property
    def num_physical(self) -> int:
        return self.physical_to_logical.shape[1]

    @property
    def slots_per_rank(self) -> int:
        return self.num_physical // self.num_ranks

    def rank_of_slot(self) -> torch.Tensor:
        """[physical slots] the rank each slot lives on."""
        return torch.arange(self.num_physical) // self.slots_per_rank

    def logical_counts(self, physical_counts: torch.Tensor) -> torch.Tensor:
        """[..., layers, physical] counts -> [..., layers, logical] by summing each logical expert's replicas."""
        num_logical = int(self.physical_to_logical.max()) + 1
        out = torch.zeros((*physical_counts.shape[:-1], num_logical), dtype=physical_counts.dtype)
        index = self.physical_to_logical.expand_as(physical_counts)
        return out.scatter_add_(-1, index, physical_counts)

    def rank_counts(self, physical_counts: torch.Tensor) -> torch.Tensor:
        """[..., layers, physical] counts -> [..., layers, ranks] tokens each rank computed."""
        return physical_counts.unflatten(-1, (self.num_ranks, self.slots_per_rank)).sum(-1)
