"""Live expert rebalancing on an expert-parallel rank: plan a placement from the loads of the last passes,
take the experts this rank newly holds from the expert_backup's shared memory, swap them in.

Runs on every rank at the same step boundary (the lock-step loop calls it), so every rank sums the same
window, plans the same placement and swaps before the next pass. Moving an expert changes where it runs,
not what it computes.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections import deque
from dataclasses import dataclass

import torch
from torch import nn

from roles.scheduler.expert_parallel.rebalance_plan import choose_placement
from roles.scheduler.expert_parallel.shard import save_placement
from roles.scheduler.loading.state import load_state
from roles.scheduler.models.swiglu import SwiGLU
from roles.scheduler.moe.placement import ExpertPlacement

log = logging.getLogger("roleserve.eplb")


@dataclass(frozen=True)
class RebalanceSettings:
    num_redundant: int  # exec.moe.num_redundant_experts
    interval_passes: int  # exec.moe.eplb_rebalance_interval_passes; 0: only on request
    min_balancedness: float  # exec.moe.eplb_min_rebalance_balancedness
    window_passes: int  # exec.moe.eplb_window_passes


@dataclass(frozen=True)
class RebalanceOutcome:
    applied: bool
    balancedness_before: float  # of the window's loads under the old placement
    balancedness_after: float  # of the same loads under the new one (the old one when skipped)
    experts_moved: int  # experts this rank took from the backup
    seconds: float
    reason: str = ""  # why it was skipped

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


class ExpertRebalancer:
    def __init__(
        self,
        engine,
        backup_tensors: dict[str, torch.Tensor],
        settings: RebalanceSettings,
        placement_path: str,
    ):
        """engine: an expert-parallel Engine; backup_tensors: every expert's tensors, by state name
        (``layers.L.moe.experts.E.…``), mapped from the expert_backup; placement_path: where rank 0 keeps
        the current placement for a rank that restarts."""
        self.engine = engine
        self.placement_path = placement_path
        self.backup = backup_tensors
        self.settings = settings
        self.window: deque[torch.Tensor] = deque(maxlen=settings.window_passes)
        self.num_applied = 0
        self.num_skipped = 0
        self.last: RebalanceOutcome | None = None

    @property
    def placement(self) -> ExpertPlacement:
        return self.engine.expert_shard.placement

    def observe(self, physical_counts: torch.Tensor) -> None:
        """One pass's [layers, physical] counts of this rank's tokens."""
        self.window.append(self.placement.logical_counts(physical_counts))

    def due(self, num_passes: int) -> bool:
        interval = self.settings.interval_passes
        return interval > 0 and num_passes > 0 and num_passes % interval == 0

    def rebalance(self) -> RebalanceOutcome:
        """Collective: every rank calls it at the same step boundary."""
        started = time.monotonic()
        shard = self.engine.expert_shard
        local = torch.stack(list(self.window)).sum(0) if self.window else None
        if local is None:
            layers, logical = self.placement.num_layers, self.placement.num_logical
            local = torch.zeros(layers, logical, dtype=torch.int64)
        load = shard.group.sum(local)
        choice = choose_placement(
            self.placement, load, self.settings.num_redundant, self.settings.min_balancedness
        )
        if choice.placement is None:
            outcome = RebalanceOutcome(
                False, choice.before, choice.after, 0, time.monotonic() - started, choice.reason
            )
            return self._done(outcome)
        new, before, after = choice.placement, choice.before, choice.after
        moved = self._swap_in(new)
        if shard.rank == 0:
            save_placement(new, self.placement_path)
        self.window.clear()  # the loads of the old placement say nothing about the new one's ranks
        return self._done(RebalanceOutcome(True, before, after, moved, time.monotonic() - started))

    def _done(self, outcome: RebalanceOutcome) -> RebalanceOutcome:
        if outcome.applied:
            self.num_applied += 1
            log.info(
                "rebalanced experts: balancedness %.3f -> %.3f (expected on the window), %d experts moved "
                "to this rank, %.3f s",
                outcome.balancedness_before,
                outcome.balancedness_after,
                outcome.experts_moved,
                outcome.seconds,
            )
        else:
            self.num_skipped += 1
            log.info("rebalance skipped: %s", outcome.reason)
        self.last = outcome
        return outcome

    def _expert(self, layer: int, logical: int) -> nn.Module:
        prefix = f"layers.{layer}.moe.experts.{logical}."
        state = {name[len(prefix) :]: t for name, t in self.backup.items() if name.startswith(prefix)}
        if not state:
            raise RuntimeError(f"the expert_backup holds no tensors for expert {logical} of layer {layer}")
        shape = self.engine.shape
        module = SwiGLU(state, "", shape.moe_intermediate_size, shape.hidden_size)
        load_state(module, state)
        return module

    def _swap_in(self, new: ExpertPlacement) -> int:
        engine, rank = self.engine, self.engine.expert_shard.rank
        old, moved = self.placement, 0
        for layer_index, layer in enumerate(engine.model.layers):
            moe = layer.moe
            held = dict(zip(old.logical_on_rank(layer_index, rank), moe.experts, strict=True))
            modules = []
            for logical in new.logical_on_rank(layer_index, rank):
                module = held.get(logical)
                if module is None:
                    module = self._expert(layer_index, logical)
                    moved += 1
                modules.append(module)
            moe.experts = nn.ModuleList(modules)
            moe.exchange.placement = new
        engine.model.expert_shard = dataclasses.replace(engine.expert_shard, placement=new)
        engine.expert_recorder.set_placement(new)
        if engine.expert_reporter is not None:
            engine.expert_reporter.placement = new
        return moved
