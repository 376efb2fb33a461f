"""A new placement of experts from the load the recorder saw (expert-parallel load balancing).

For each MoE layer, from the tokens each logical expert received over a window:
1. replicate: the `num_redundant` extra slots go, one at a time, to the expert with the highest load per
   replica (at most one replica per rank), so a hot expert's tokens can be spread over several ranks;
2. pack: the replicas (each carrying load / replicas) are placed heaviest first, each on the rank with the
   least load so far that still has a free slot, preferring a rank that does not yet hold that expert.
Every rank holds the same number of slots. The plan depends only on the loads, so every rank computes the
same one. Its expected balancedness is the balancedness the window's loads would have had under it.
A plan is applied only when the window's balancedness is at most the minimum and the plan's is not below it:
the packing is greedy, and a placement balanced better than the greedy one would give is kept.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from roles.scheduler.expert_stats.balancedness import pass_balancedness
from roles.scheduler.moe.placement import ExpertPlacement


def replica_counts(load: torch.Tensor, num_physical: int, num_ranks: int) -> list[int]:
    """load [logical] -> how many slots each logical expert gets (at least one), num_physical in all. An
    expert gets at most one replica per rank while another can still take one (two on a rank do not help)."""
    replicas = [1] * load.shape[0]
    values = load.double().tolist()
    for _ in range(num_physical - len(replicas)):
        open_ = [e for e in range(len(replicas)) if replicas[e] < num_ranks] or range(len(replicas))
        hottest = max(open_, key=lambda e: (values[e] / replicas[e], -e))
        replicas[hottest] += 1
    return replicas


def pack(load: torch.Tensor, replicas: list[int], num_ranks: int) -> list[list[int]]:
    """-> for each rank, the logical expert of each of its slots (sorted), balancing load per rank."""
    values = load.double().tolist()
    items = sorted(
        ((values[e] / count, e) for e, count in enumerate(replicas) for _ in range(count)),
        key=lambda item: (-item[0], item[1]),
    )
    per_rank = len(items) // num_ranks
    ranks: list[list[int]] = [[] for _ in range(num_ranks)]
    totals = [0.0] * num_ranks
    for share, expert in items:
        free = [r for r in range(num_ranks) if len(ranks[r]) < per_rank]
        without = [r for r in free if expert not in ranks[r]] or free
        rank = min(without, key=lambda r: (totals[r], r))
        ranks[rank].append(expert)
        totals[rank] += share
    return [sorted(slots) for slots in ranks]


def plan_placement(logical_load: torch.Tensor, num_ranks: int, num_redundant: int) -> ExpertPlacement:
    """logical_load [layers, logical] tokens -> a placement with logical + num_redundant slots per layer,
    the same number on every rank."""
    layers, num_logical = logical_load.shape
    num_physical = num_logical + num_redundant
    if num_physical % num_ranks:
        raise ValueError(
            f"{num_logical} experts + {num_redundant} redundant cannot be split evenly over {num_ranks} ranks"
        )
    table = torch.empty(layers, num_physical, dtype=torch.int64)
    for layer in range(layers):
        load = logical_load[layer]
        slots = pack(load, replica_counts(load, num_physical, num_ranks), num_ranks)
        table[layer] = torch.tensor([expert for rank in slots for expert in rank])
    return ExpertPlacement(table, num_ranks)


def expected_rank_load(placement: ExpertPlacement, logical_load: torch.Tensor) -> torch.Tensor:
    """[layers, ranks]: the tokens each rank would compute if each expert's load were spread evenly over
    its replicas."""
    table, counts = placement.replica_table()
    share = logical_load.double() / counts.double()  # [layers, logical] per replica
    per_slot = torch.gather(share, 1, placement.physical_to_logical)
    return placement.rank_counts(per_slot)


@dataclass(frozen=True)
class PlanChoice:
    placement: ExpertPlacement | None  # the new placement; None: keep the current one
    before: float  # the window's balancedness under the current placement
    after: float  # under the new one (before when there is none)
    reason: str = ""  # why the current one is kept


def choose_placement(
    current: ExpertPlacement, logical_load: torch.Tensor, num_redundant: int, min_balancedness: float
) -> PlanChoice:
    """Whether to move from `current` for the window's logical_load [layers, logical], and where to. The
    same loads give the same choice on every rank."""
    before = pass_balancedness(expected_rank_load(current, logical_load))
    if int(logical_load.sum()) == 0:
        return PlanChoice(None, before, before, "no tokens in the window")
    if before > min_balancedness:
        reason = f"balancedness {before:.3f} is above exec.moe.eplb_min_rebalance_balancedness={min_balancedness:g}"
        return PlanChoice(None, before, before, reason)
    new = plan_placement(logical_load, current.num_ranks, num_redundant)
    after = pass_balancedness(expected_rank_load(new, logical_load))
    if after < before:
        reason = f"the plan's balancedness {after:.3f} would be below the current {before:.3f}"
        return PlanChoice(None, before, before, reason)
    return PlanChoice(new, before, after)
