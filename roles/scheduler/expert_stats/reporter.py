"""Balancedness after each forward pass: tracked when any report mode is on, logged every N passes when
the server log is one of its outputs."""

from __future__ import annotations

import logging

import torch

from roles.protocol import ExpertBalancedness
from roles.scheduler.expert_stats.balancedness import BalancednessReport, BalancednessTracker
from roles.scheduler.moe.placement import ExpertPlacement

log = logging.getLogger("roleserve.expert_balancedness")


TOKENS_PER_RANK_BUCKETS = tuple(float(2**i) for i in range(13))  # 1 .. 4096 tokens


class BalancednessReporter:
    def __init__(self, placement: ExpertPlacement, log_every: int | None, exports: bool = False):
        """log_every: passes between two log lines, None when the server log is not an output; exports:
        keep what Prometheus shows (snapshot() for the load report)."""
        self.placement = placement
        self.log_every = log_every
        self.exports = exports
        self.tracker = BalancednessTracker()
        self.num_passes = 0
        self.balancedness_sum = 0.0
        self.layer_bucket_counts = torch.zeros(
            placement.num_layers, len(TOKENS_PER_RANK_BUCKETS) + 1, dtype=torch.int64
        )
        self.layer_token_sums = torch.zeros(placement.num_layers, dtype=torch.float64)

    def observe(self, pass_id: int, physical_counts: torch.Tensor) -> BalancednessReport:
        """physical_counts: [layers, physical slots] tokens routed in one pass."""
        rank_counts = self.placement.rank_counts(physical_counts)
        report = self.tracker.observe(pass_id, rank_counts)
        self.num_passes += 1
        self.balancedness_sum += report.current
        if self.exports:
            bounds = torch.tensor(TOKENS_PER_RANK_BUCKETS, dtype=torch.float64)
            buckets = torch.bucketize(rank_counts.to(torch.float64), bounds)  # [layers, ranks]
            self.layer_bucket_counts.scatter_add_(1, buckets, torch.ones_like(buckets))
            self.layer_token_sums += rank_counts.sum(-1).to(torch.float64)
        if self.log_every is not None and self.num_passes % self.log_every == 0:
            rolling = ", ".join(f"last {w}: {v:.4f}" for w, v in report.rolling.items())
            log.info("expert balancedness at pass %d: %.4f (%s)", pass_id, report.current, rolling)
        return report

    def snapshot(self) -> ExpertBalancedness | None:
        last = self.tracker.last
        if last is None:
            return None
        return ExpertBalancedness(
            num_passes=self.num_passes,
            balancedness_sum=self.balancedness_sum,
            current=last.current,
            rolling={str(window): value for window, value in last.rolling.items()},
            bucket_bounds=list(TOKENS_PER_RANK_BUCKETS),
            layer_bucket_counts=self.layer_bucket_counts.tolist(),
            layer_token_sums=self.layer_token_sums.tolist(),
        )
