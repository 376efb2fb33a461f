"""The recorder of a scheduler that records no expert routing (``exec.moe.expert_distribution_recorder_mode:
off``, and every dense model): each hook an empty call. Apart from ``recorder``, so the engine holds one
without importing torch."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

    from roles.scheduler.moe.placement import ExpertPlacement


class RecorderOff(RuntimeError):
    pass


class NoopRecorder:
    """`off`: every hook is an empty call; start/stop/dump explain how to turn recording on."""

    mode = "off"
    counts_passes = False

    def begin_pass(self, pass_id: int, positions: torch.Tensor | None = None) -> None:
        pass

    def on_route(self, layer: int, topk_ids: torch.Tensor) -> None:
        pass

    def end_pass(self) -> torch.Tensor | None:
        return None

    def set_placement(self, placement: ExpertPlacement) -> None:
        pass

    def _refuse(self) -> None:
        raise RecorderOff(
            "the expert distribution recorder is off: set exec.moe.expert_distribution_recorder_mode "
            "to stat, per_pass or per_token"
        )

    def start(self) -> None:
        self._refuse()

    def stop(self) -> None:
        self._refuse()

    def dump(self) -> dict:
        self._refuse()
        return {}
