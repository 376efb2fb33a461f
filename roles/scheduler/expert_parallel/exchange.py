"""One MoE layer under expert parallelism: each (token, expert) pair to the rank holding that expert, the
expert's output back, combined where the token lives.

Per layer, three all-to-alls over the group:
1. counts: how many rows this rank sends to each physical slot (every rank learns what it will receive
   for each of its own slots, from each rank);
2. rows: the hidden rows, sorted by slot, so each rank's share is contiguous;
3. outputs: each received row through its slot's expert, sent back in the order it came.
The pairs are sorted and combined by the same code as on one rank (``models.moe.pairs_by_expert``,
``add_weighted``): outputs weighted and added into their tokens' rows slot by slot, in increasing order.
"""

from __future__ import annotations

import torch
from torch import nn

from roles.scheduler.expert_parallel.group import ExpertParallelGroup
from roles.scheduler.moe.combine import add_weighted, pairs_by_expert
from roles.scheduler.moe.placement import ExpertPlacement


def run_local_experts(rows: torch.Tensor, counts: torch.Tensor, experts: nn.ModuleList) -> torch.Tensor:
    """rows as received (by source rank, then by local slot), counts [sources, local slots] -> each row
    through its slot's expert, in the same order. Each expert runs once, on its rows from every source."""
    flat = counts.reshape(-1)
    slot_of_row = torch.arange(counts.shape[1]).repeat(counts.shape[0]).repeat_interleave(flat)
    order = torch.argsort(slot_of_row, stable=True)
    out = torch.empty_like(rows)
    start = 0
    for slot, count in enumerate(counts.sum(0).tolist()):
        if count:
            index = order[start : start + count]
            out.index_copy_(0, index, experts[slot](rows.index_select(0, index)).to(out.dtype))
            start += count
    return out


class ExpertExchange:
    def __init__(self, group: ExpertParallelGroup, placement: ExpertPlacement, layer: int):
        self.group, self.placement, self.layer = group, placement, layer

    def slots_for(self, expert_ids: torch.Tensor) -> torch.Tensor:
        """(tokens, top_k) logical ids -> the physical slots the pairs go to."""
        return self.placement.dispatch_slots(self.layer, expert_ids)

    def run(
        self, hidden: torch.Tensor, weights: torch.Tensor, slots: torch.Tensor, experts: nn.ModuleList
    ) -> torch.Tensor:
        """hidden (T, H), weights and physical slots (T, top_k); experts: this rank's, one per local slot.
        -> sum over k of weights[t, k] * expert(slots[t, k])(hidden[t]). T may be 0 (an idle rank still
        serves the other ranks' tokens)."""
        ranks, per_rank = self.group.size, self.placement.slots_per_rank
        token_rows, pair_weights, counts = pairs_by_expert(slots, weights, self.placement.num_physical)
        slot_counts = torch.tensor(counts, dtype=torch.int64)
        received_counts = self.group.exchange_counts(slot_counts).view(ranks, per_rank)
        send_splits = slot_counts.view(ranks, per_rank).sum(1).tolist()
        receive_splits = received_counts.sum(1).tolist()
        received = self.group.exchange_rows(hidden.index_select(0, token_rows), send_splits, receive_splits)
        computed = run_local_experts(received, received_counts, experts)
        returned = self.group.exchange_rows(computed, receive_splits, send_splits)
        return add_weighted(
            torch.zeros_like(hidden), token_rows, pair_weights, counts, lambda _, pairs: returned[pairs]
        )
