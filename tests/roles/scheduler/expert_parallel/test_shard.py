"""Which experts a rank holds and where tokens go: the placement's dispatch and a rank's share of the state."""

import pytest
import torch

from roles.scheduler.expert_parallel.shard import ExpertShard
from roles.scheduler.moe.placement import ExpertPlacement


class GroupOf:
    """The two attributes a shard reads from its group (no collective runs here)."""

    def __init__(self, rank: int, size: int):
        self.rank, self.size = rank, size


def test_contiguous_placement_sends_each_expert_to_its_rank():
    placement = ExpertPlacement.contiguous(num_layers=2, num_experts=4, num_ranks=2)
    ids = torch.tensor([[0, 3], [2, 1]])
    assert torch.equal(placement.dispatch_slots(1, ids), ids)
    assert placement.logical_on_rank(0, 1) == [2, 3]
    assert list(placement.slots_of_rank(1)) == [2, 3]


def test_a_replicated_expert_spreads_its_tokens_over_its_replicas():
    # 3 logical experts in 4 slots over 2 ranks: expert 0 on slot 0 and slot 3.
    placement = ExpertPlacement(torch.tensor([[0, 1, 2, 0]]), num_ranks=2)
    slots = placement.dispatch_slots(0, torch.tensor([[0], [0], [0], [2]]))
    assert slots.reshape(-1).tolist() == [0, 3, 0, 2]  # token t to replica t mod 2
    assert placement.logical_on_rank(0, 1) == [2, 0]


def test_a_rank_keeps_its_experts_renamed_to_its_slots_and_everything_else():
    placement = ExpertPlacement(torch.tensor([[0, 1, 2, 0]]), num_ranks=2)
    tensors = {e: torch.full((1,), float(e)) for e in range(3)}
    state = {f"layers.0.moe.experts.{e}.down_proj.weight": tensors[e] for e in range(3)}
    state["layers.0.moe.router"] = torch.zeros(3, 2)
    local = ExpertShard(GroupOf(1, 2), placement).local_state(state)
    assert sorted(local) == [
        "layers.0.moe.experts.0.down_proj.weight",  # slot 2 holds expert 2
        "layers.0.moe.experts.1.down_proj.weight",  # slot 3 holds expert 0 (a replica: the same tensor)
        "layers.0.moe.router",
    ]
    assert local["layers.0.moe.experts.0.down_proj.weight"] is tensors[2]
    assert local["layers.0.moe.experts.1.down_proj.weight"] is tensors[0]


def test_a_placement_over_another_number_of_ranks_is_refused():
    with pytest.raises(ValueError, match="over 4 ranks; the group has 2"):
        ExpertShard(GroupOf(0, 2), ExpertPlacement.contiguous(1, 4, num_ranks=4))


def test_a_rank_converts_only_its_own_experts_from_the_checkpoint(tmp_path):
    from roles.weight_format.execution_format import load_execution_weights
    from tests.moe_checkpoint import write_tiny_mixtral

    folder = write_tiny_mixtral(tmp_path / "mixtral")  # 4 experts per layer
    converted = load_execution_weights(str(folder), "exact", lambda shape: lambda layer: {2, 3})
    experts = {name.split(".")[4] for name in converted.state if ".moe.experts." in name}
    assert experts == {"2", "3"}
    assert "layers.0.moe.router" in converted.state and "layers.0.qkv_proj.weight" in converted.state
