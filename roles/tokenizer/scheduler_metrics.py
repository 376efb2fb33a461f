"""Each scheduler's latest LoadReport as Prometheus families, read when /metrics is scraped.

Every tokenizer worker receives every scheduler's reports, so the worker a scrape reaches shows them
whole: they are collected here at scrape time, never recorded in the workers' shared files (which would
add one copy per worker)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from roles.protocol import LoadReport


def prefix_cache_hit_ratio(report: LoadReport) -> float:
    """Prompt tokens served from the prefix cache / prompt tokens, since the scheduler started."""
    return report.num_cached_prompt_tokens / max(1, report.num_prompt_tokens)


_GAUGES: tuple[tuple[str, str, Callable[[LoadReport], float]], ...] = (
    (
        "roleserve_scheduler_running_requests",
        "Requests a scheduler runs (prefilling or decoding)",
        lambda r: r.num_running,
    ),
    (
        "roleserve_scheduler_waiting_requests",
        "Requests waiting in a scheduler's queue",
        lambda r: r.num_waiting,
    ),
    (
        "roleserve_kv_cache_usage_ratio",
        "Fraction of a scheduler's KV-cache pages in use",
        lambda r: r.kv_usage,
    ),
    (
        "roleserve_prefix_cache_hit_ratio",
        "Prompt tokens served from the prefix cache / prompt tokens, since the scheduler started",
        prefix_cache_hit_ratio,
    ),
)


class SchedulerLoadCollector:
    def __init__(self, reports: dict[int, LoadReport]):
        self.reports = reports  # scheduler instance -> its latest report

    def collect(self) -> Iterator[Metric]:
        labels = ("role", "instance")
        reports = sorted(self.reports.items())
        for name, doc, value_of in _GAUGES:
            gauge = GaugeMetricFamily(name, doc, labels=labels)
            for instance, report in reports:
                gauge.add_metric(("scheduler", str(instance)), value_of(report))
            yield gauge
        dropped = CounterMetricFamily(
            "roleserve_scheduler_dropped_frames", "Malformed IPC frames a scheduler dropped", labels=labels
        )
        for instance, report in reports:
            dropped.add_metric(("scheduler", str(instance)), report.num_dropped_frames)
        yield dropped
