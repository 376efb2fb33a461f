"""Expert balancedness as Prometheus families, from each scheduler's latest load report: a summary
`roleserve_eplb_balancedness` (per-pass balancedness: _sum and _count), a gauge of its rolling means, and
a per-layer histogram `roleserve_eplb_tokens_per_rank` of the tokens each EP rank computed per pass; and the
counter `roleserve_eplb_rebalances_total` of expert rebalances, applied or skipped. Read at scrape time, like
scheduler_metrics.py."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
    SummaryMetricFamily,
)
from prometheus_client.utils import floatToGoString

from roles.protocol import ExpertBalancedness, LoadReport

_WHO = ("role", "instance")


def _cumulative_buckets(stats: ExpertBalancedness, layer: int) -> list[tuple[str, int]]:
    bounds = (*stats.bucket_bounds, float("inf"))
    running = itertools.accumulate(stats.layer_bucket_counts[layer])
    return [(floatToGoString(bound), count) for bound, count in zip(bounds, running, strict=True)]


class BalancednessCollector:
    """Only for schedulers that export it (exec.moe.expert_balancedness_report_mode prometheus or both)."""

    def __init__(self, reports: dict[int, LoadReport]):
        self.reports = reports

    def collect(self) -> Iterator[Metric]:
        summary = SummaryMetricFamily(
            "roleserve_eplb_balancedness",
            "Balancedness of expert-parallel work per forward pass (1 is even)",
            labels=_WHO,
        )
        rolling = GaugeMetricFamily(
            "roleserve_eplb_balancedness_rolling",
            "Mean balancedness over the last N forward passes",
            labels=(*_WHO, "window"),
        )
        tokens = HistogramMetricFamily(
            "roleserve_eplb_tokens_per_rank",
            "Tokens each EP rank computed in one pass, per MoE layer",
            labels=(*_WHO, "layer"),
        )
        for instance, report in sorted(self.reports.items()):
            stats = report.expert_balancedness
            if stats is None:
                continue
            who = ("scheduler", str(instance))
            summary.add_metric(who, stats.num_passes, stats.balancedness_sum)
            for window, value in stats.rolling.items():
                rolling.add_metric((*who, window), value)
            for layer, token_sum in enumerate(stats.layer_token_sums):
                tokens.add_metric((*who, str(layer)), _cumulative_buckets(stats, layer), token_sum)
        yield from (summary, rolling, tokens)


class RebalanceCollector:
    """The rebalance counters of the schedulers that can rebalance; no family when none can."""

    def __init__(self, reports: dict[int, LoadReport]):
        self.reports = reports

    def collect(self) -> Iterator[Metric]:
        counts = [
            (instance, result, count)
            for instance, report in sorted(self.reports.items())
            if report.expert_rebalances is not None
            for result, count in sorted(report.expert_rebalances.items())
        ]
        if not counts:
            return
        family = CounterMetricFamily(
            "roleserve_eplb_rebalances",
            "Expert rebalances over the expert-parallel ranks",
            labels=(*_WHO, "result"),
        )
        for instance, result, count in counts:
            family.add_metric(("scheduler", str(instance), result), count)
        yield family
