"""The rebalance plan: replicas for hot experts, packing that balances ranks, the same plan from the same
loads."""

import pytest
import torch

from roles.scheduler.expert_parallel.rebalance_plan import (
    choose_placement,
    expected_rank_load,
    pack,
    plan_placement,
    replica_counts,
)
from roles.scheduler.expert_stats.balancedness import pass_balancedness
from roles.scheduler.moe.placement import ExpertPlacement


def test_extra_slots_go_to_the_hottest_expert_per_replica_one_per_rank():
    assert replica_counts(torch.tensor([100.0, 10.0, 10.0, 40.0]), 6, num_ranks=3) == [3, 1, 1, 1]
    assert replica_counts(torch.tensor([100.0, 10.0, 10.0, 60.0]), 6, num_ranks=3) == [2, 1, 1, 2]
    assert replica_counts(torch.tensor([100.0, 10.0, 10.0, 40.0]), 6, num_ranks=2) == [2, 1, 1, 2]


def test_packing_balances_load_and_keeps_replicas_apart():
    ranks = pack(torch.tensor([90.0, 10.0, 50.0, 50.0]), [2, 1, 1, 2], num_ranks=3)
    assert [len(slots) for slots in ranks] == [2, 2, 2]
    assert all(len(set(slots)) == len(slots) for slots in ranks)  # no rank holds an expert twice


def test_a_skewed_load_is_more_balanced_after_the_plan():
    load = torch.tensor([[900.0, 50.0, 30.0, 20.0], [10.0, 10.0, 500.0, 480.0]])
    before = ExpertPlacement.contiguous(2, 4, num_ranks=2)
    after = plan_placement(load, num_ranks=2, num_redundant=2)
    assert after.num_physical == 6 and after.slots_per_rank == 3
    assert pass_balancedness(expected_rank_load(after, load)) > pass_balancedness(
        expected_rank_load(before, load)
    )
    assert pass_balancedness(expected_rank_load(after, load)) > 0.95
    assert torch.equal(plan_placement(load, 2, 2).physical_to_logical, after.physical_to_logical)
    for layer in range(2):  # every expert still has a slot
        assert set(after.physical_to_logical[layer].tolist()) == {0, 1, 2, 3}


def test_slots_that_cannot_be_split_evenly_are_refused():
    with pytest.raises(ValueError, match="4 experts \\+ 1 redundant cannot be split evenly over 2 ranks"):
        plan_placement(torch.ones(1, 4), num_ranks=2, num_redundant=1)


def test_a_skewed_window_below_the_minimum_gets_the_plan():
    load = torch.tensor([[900.0, 50.0, 30.0, 20.0]])
    choice = choose_placement(ExpertPlacement.contiguous(1, 4, num_ranks=2), load, 2, min_balancedness=0.9)
    assert choice.placement is not None and choice.reason == ""
    assert choice.after > choice.before
    assert torch.equal(choice.placement.physical_to_logical, plan_placement(load, 2, 2).physical_to_logical)


def test_a_placement_balanced_better_than_the_greedy_plan_is_kept():
    """Loads 4, 9, 9, 3 on two ranks of three slots: {0, 1, 3} and {0, 2, 3} carry 12.5 each, while the
    greedy packing leaves 13 against 12. Even with a minimum of 1.0 the current placement stays."""
    load = torch.tensor([[4.0, 9.0, 9.0, 3.0]])
    current = ExpertPlacement(torch.tensor([[0, 1, 3, 0, 2, 3]]), num_ranks=2)
    greedy = pass_balancedness(expected_rank_load(plan_placement(load, 2, 2), load))
    assert greedy < 1.0
    choice = choose_placement(current, load, 2, min_balancedness=1.0)
    assert choice.placement is None
    assert choice.before == choice.after == pytest.approx(1.0)
    assert "would be below the current 1.000" in choice.reason


def test_no_tokens_or_a_balanced_enough_window_keeps_the_placement():
    current = ExpertPlacement.contiguous(1, 4, num_ranks=2)
    empty = choose_placement(current, torch.zeros(1, 4, dtype=torch.int64), 2, min_balancedness=1.0)
    assert empty.placement is None and empty.reason == "no tokens in the window"
    above = choose_placement(current, torch.tensor([[5.0, 5.0, 6.0, 4.0]]), 2, min_balancedness=0.5)
    assert above.placement is None
    assert above.reason == "balancedness 1.000 is above exec.moe.eplb_min_rebalance_balancedness=0.5"
