"""The expert distribution recorder: which experts MoE routing chose, per forward pass.

Modes (`exec.moe.expert_distribution_recorder_mode`):
- `off`: NoopRecorder, whose hooks do nothing; the model is built with it and pays one empty call per layer.
- `stat`: tokens per (layer, physical expert slot) of each pass; passes recorded since `start()` go into a
  ring buffer of `buffer_size` passes, as counts per logical expert (so they survive a rebalance).
- `per_pass`: the same counts kept as one record per pass (the last `buffer_size` passes).
- `per_token`: the top-k expert ids chosen for each token, with its position (the last `buffer_size` passes).

The mode is chosen once, when the recorder is built (`make_recorder`); hooks are called by the MoE layers:
`begin_pass(pass_id, positions)`, `on_route(layer, topk_ids)` per MoE layer, then `end_pass()`.
A dump is plain JSON-ready data, documented in `dump()`.
"""

from __future__ import annotations

from collections import deque

import torch

from roles.scheduler.expert_stats.noop_recorder import NoopRecorder, RecorderOff  # noqa: F401 (re-exported)
from roles.scheduler.moe.placement import ExpertPlacement

MODES = ("off", "stat", "per_pass", "per_token")


class CountingRecorder(NoopRecorder):
    """`stat`: counts every pass (so balancedness can be reported); keeps those recorded since start()."""

    mode = "stat"
    counts_passes = True

    def __init__(self, placement: ExpertPlacement, buffer_size: int):
        self.placement = placement
        self.buffer_size = buffer_size
        self.recording = False
        self._pass_id = -1
        self._current = torch.zeros(placement.num_layers, placement.num_physical, dtype=torch.int64)
        self._kept: deque[tuple[int, torch.Tensor]] = deque(maxlen=buffer_size)

    def begin_pass(self, pass_id: int, positions: torch.Tensor | None = None) -> None:
        self._pass_id = pass_id
        self._current.zero_()

    def on_route(self, layer: int, topk_ids: torch.Tensor) -> None:
        flat = topk_ids.reshape(-1).to(torch.int64)
        self._current[layer] += torch.bincount(flat, minlength=self.placement.num_physical)

    def end_pass(self) -> torch.Tensor:
        """This pass's [layers, physical] counts (kept as logical counts, when recording)."""
        counts = self._current.clone()
        if self.recording:
            self._keep(self.placement.logical_counts(counts))
        return counts

    def _keep(self, logical_counts: torch.Tensor) -> None:
        self._kept.append((self._pass_id, logical_counts))

    def kept_counts(self) -> list[torch.Tensor]:
        """The [layers, logical] counts of each kept pass, oldest first (whatever the placement then)."""
        return [counts for _, counts in self._kept]

    def set_placement(self, placement: ExpertPlacement) -> None:
        """Experts moved (a rebalance): count the new physical slots from the next pass on."""
        self.placement = placement
        self._current = torch.zeros(placement.num_layers, placement.num_physical, dtype=torch.int64)

    def start(self) -> None:
        self._kept.clear()
        self.recording = True

    def stop(self) -> None:
        self.recording = False

    def dump(self) -> dict:
        """{"mode", "num_layers", "num_logical_experts", "pass_ids": [...], "logical_counts": [layer][expert]
        summed over the kept passes}; per_pass adds "per_pass": [{"pass_id", "logical_counts"}],
        per_token adds "per_token": [{"pass_id", "layer", "positions", "topk_ids"}]."""
        logical = torch.zeros(self.placement.num_layers, self.placement.num_logical, dtype=torch.int64)
        for _, counts in self._kept:
            logical += counts
        return {
            "mode": self.mode,
            "num_layers": self.placement.num_layers,
            "num_logical_experts": logical.shape[-1],
            "pass_ids": [pass_id for pass_id, _ in self._kept],
            "logical_counts": logical.tolist(),
        }


class PerPassRecorder(CountingRecorder):
    mode = "per_pass"

    def dump(self) -> dict:
        result = super().dump()
        result["per_pass"] = [
            {"pass_id": pass_id, "logical_counts": counts.tolist()} for pass_id, counts in self._kept
        ]
        return result


class PerTokenRecorder(CountingRecorder):
    mode = "per_token"

    def __init__(self, placement: ExpertPlacement, buffer_size: int):
        super().__init__(placement, buffer_size)
        self._positions: torch.Tensor | None = None
        self._routes: list[dict] = []
        self._token_passes: deque[list[dict]] = deque(maxlen=buffer_size)

    def begin_pass(self, pass_id: int, positions: torch.Tensor | None = None) -> None:
        super().begin_pass(pass_id, positions)
        self._positions = positions
        self._routes = []

    def on_route(self, layer: int, topk_ids: torch.Tensor) -> None:
        super().on_route(layer, topk_ids)
        if self.recording and topk_ids.numel():
            logical = self.placement.physical_to_logical[layer][topk_ids.to(torch.int64)]
            positions = self._positions.tolist() if self._positions is not None else None
            self._routes.append(
                {
                    "pass_id": self._pass_id,
                    "layer": layer,
                    "positions": positions,
                    "topk_ids": logical.tolist(),
                }
            )

    def _keep(self, counts: torch.Tensor) -> None:
        super()._keep(counts)
        self._token_passes.append(self._routes)

    def start(self) -> None:
        super().start()
        self._token_passes.clear()

    def dump(self) -> dict:
        result = super().dump()
        result["per_token"] = [route for routes in self._token_passes for route in routes]
        return result


def make_recorder(mode: str, placement: ExpertPlacement, buffer_size: int) -> NoopRecorder:
    """The recorder for a mode, chosen once: NoopRecorder for off, a counting one otherwise."""
    if mode == "off":
        return NoopRecorder()
    kinds = {"stat": CountingRecorder, "per_pass": PerPassRecorder, "per_token": PerTokenRecorder}
    if mode not in kinds:
        raise ValueError(f"unknown expert distribution recorder mode {mode!r}; one of {', '.join(MODES)}")
    return kinds[mode](placement, buffer_size)
