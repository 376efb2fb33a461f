"""The combine step of a mixture of experts: each token's chosen experts' outputs, weighted, added back into
its row; the same order of additions on one rank and under expert parallelism."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn


def pairs_by_expert(
    expert_ids: torch.Tensor, weights: torch.Tensor, num_experts: int
) -> tuple[torch.Tensor, torch.Tensor, list[int]]:
    """The (token, k) pairs sorted by expert: (token row of each pair, its weight as a column, pairs per
    expert in increasing expert order)."""
    top_k = expert_ids.shape[1]
    flat_ids = expert_ids.reshape(-1)
    order = torch.argsort(flat_ids, stable=True)
    counts = torch.bincount(flat_ids, minlength=num_experts).tolist()
    return order // top_k, weights.reshape(-1)[order].unsqueeze(-1), counts


def add_weighted(
    out: torch.Tensor,
    token_rows: torch.Tensor,
    pair_weights: torch.Tensor,
    counts: list[int],
    output_of: Callable[[int, slice], torch.Tensor],
) -> torch.Tensor:
    """out[t] += weight * output for every pair, expert by expert in increasing order: ``output_of(expert,
    pairs)`` is that expert's output for its run of sorted pairs. The one combine of one rank and of
    expert parallelism alike, so both add in the same order."""
    start = 0
    for expert, count in enumerate(counts):
        if count:
            pairs = slice(start, start + count)
            out.index_add_(0, token_rows[pairs], output_of(expert, pairs) * pair_weights[pairs])
            start += count
    return out


def run_experts(
    hidden: torch.Tensor, weights: torch.Tensor, expert_ids: torch.Tensor, experts: nn.ModuleList
) -> torch.Tensor:
    """sum over k of weights[t, k] * experts[expert_ids[t, k]](hidden[t]) for every token t, each expert run
    once on all of its tokens."""
    token_rows, pair_weights, counts = pairs_by_expert(expert_ids, weights, len(experts))

    def output_of(expert: int, pairs: slice) -> torch.Tensor:
        return experts[expert](hidden.index_select(0, token_rows[pairs]))

    return add_weighted(torch.zeros_like(hidden), token_rows, pair_weights, counts, output_of)
