"""Where experts live: a logical-to-physical map over expert-parallel ranks.

Each MoE layer has `num_logical` experts. Physical slots are numbered rank by rank, `slots_per_rank` on each
rank; a logical expert may occupy several slots (a replica of a hot expert). Without replication and with
one rank, physical slot i holds logical expert i.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

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

    @property
    def num_logical(self) -> int:
        return int(self.physical_to_logical.max()) + 1

    def slots_of_rank(self, rank: int) -> range:
        return range(rank * self.slots_per_rank, (rank + 1) * self.slots_per_rank)

    def logical_on_rank(self, layer: int, rank: int) -> list[int]:
        """The logical expert each of the rank's slots holds, in slot order."""
        slots = self.slots_of_rank(rank)
        return self.physical_to_logical[layer, slots.start : slots.stop].tolist()

    def replica_table(self) -> tuple[torch.Tensor, torch.Tensor]:
        return self._replica_table

    @cached_property
    def _replica_table(self) -> tuple[torch.Tensor, torch.Tensor]:
        """([layers, logical, most replicas] the slots of each logical expert, [layers, logical] how many)."""
        layers, num_logical = self.num_layers, self.num_logical
        counts = torch.zeros(layers, num_logical, dtype=torch.int64)
        counts.scatter_add_(1, self.physical_to_logical, torch.ones_like(self.physical_to_logical))
        if int(counts.min()) == 0:
            raise ValueError("every logical expert needs at least one physical slot")
        table = torch.zeros(layers, num_logical, int(counts.max()), dtype=torch.int64)
        filled = torch.zeros(layers, num_logical, dtype=torch.int64)
        for layer in range(layers):
            for slot, logical in enumerate(self.physical_to_logical[layer].tolist()):
                table[layer, logical, filled[layer, logical]] = slot
                filled[layer, logical] += 1
        return table, counts

    def dispatch_slots(self, layer: int, expert_ids: torch.Tensor) -> torch.Tensor:
        """(tokens, top_k) logical expert ids -> the physical slot each pair goes to. A logical expert with
        several replicas spreads its tokens over them by token index (token t to replica t mod replicas)."""
        table, counts = self._replica_table
        if table.shape[2] == 1:
            return table[layer, :, 0][expert_ids]
        token = torch.arange(expert_ids.shape[0]).unsqueeze(1)
        replica = token % counts[layer][expert_ids]
        return table[layer][expert_ids, replica]

    def rank_of_slot(self) -> torch.Tensor:
        """[physical slots] the rank each slot lives on."""
        return torch.arange(self.num_physical) // self.slots_per_rank

    def logical_counts(self, physical_counts: torch.Tensor) -> torch.Tensor:
        """[..., layers, physical] counts -> [..., layers, logical] by summing each logical expert's replicas."""
        out = torch.zeros((*physical_counts.shape[:-1], self.num_logical), dtype=physical_counts.dtype)
        index = self.physical_to_logical.expand_as(physical_counts)
        return out.scatter_add_(-1, index, physical_counts)

    def rank_counts(self, physical_counts: torch.Tensor) -> torch.Tensor:
        """[..., layers, physical] counts -> [..., layers, ranks] tokens each rank computed."""
        return physical_counts.unflatten(-1, (self.num_ranks, self.slots_per_rank)).sum(-1)
