"""Balancedness of expert-parallel work: per pass and MoE layer, (mean + eps) / (max + eps) of the tokens each
rank computed, averaged over layers; 1.0 is perfectly even. Rolling means over the last 10, 100, 1000 passes."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import torch

EPS = 1e-5
WINDOWS = (10, 100, 1000)


def pass_balancedness(rank_counts: torch.Tensor) -> float:
    """[layers, ranks] tokens per rank in one forward pass -> one number in (0, 1]."""
    counts = rank_counts.to(torch.float64)
    per_layer = (counts.mean(-1) + EPS) / (counts.max(-1).values + EPS)
    return float(per_layer.mean())


@dataclass(frozen=True)
class BalancednessReport:
    pass_id: int
    current: float
    rolling: dict[int, float]  # window -> mean over the last min(window, passes seen) passes


class BalancednessTracker:
    def __init__(self, windows: tuple[int, ...] = WINDOWS):
        self.windows = windows
        self._recent: deque[float] = deque(maxlen=max(windows))
        self.last: BalancednessReport | None = None

    def observe(self, pass_id: int, rank_counts: torch.Tensor) -> BalancednessReport:
        current = pass_balancedness(rank_counts)
        self._recent.append(current)
        recent = list(self._recent)
        rolling = {w: sum(recent[-w:]) / len(recent[-w:]) for w in self.windows}
        self.last = BalancednessReport(pass_id, current, rolling)
        return self.last
