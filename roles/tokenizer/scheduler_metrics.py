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


def speculative_acceptance_ratio(report: LoadReport) -> float:
    """Drafted tokens the target kept / drafted tokens, since the scheduler started; 0 before any draft."""
    return report.num_spec_accepted_tokens / max(1, report.num_spec_drafted_tokens)


def speculative_tokens_per_step(report: LoadReport) -> float:
    """Tokens a drafted request got per verification step (kept drafted tokens + the target's own); 0
    before any."""
    return report.num_spec_emitted_tokens / max(1, report.num_spec_verifications)


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
    (
        "roleserve_spec_decode_acceptance_ratio",
        "Speculative decoding: drafted tokens kept / drafted tokens, since the scheduler started",
        speculative_acceptance_ratio,
    ),
    (
        "roleserve_spec_decode_tokens_per_step",
        "Speculative decoding: tokens emitted per verification step of a drafted request",
        speculative_tokens_per_step,
    ),
)

# Counters (exposed with _total): name, doc, value.
_COUNTERS: tuple[tuple[str, str, Callable[[LoadReport], float]], ...] = (
    (
        "roleserve_scheduler_dropped_frames",
        "Malformed IPC frames a scheduler dropped",
        lambda r: r.num_dropped_frames,
    ),
    (
        "roleserve_spec_decode_draft_tokens",
        "Speculative decoding: tokens drafted for verification",
        lambda r: r.num_spec_drafted_tokens,
    ),
    (
        "roleserve_spec_decode_accepted_tokens",
        "Speculative decoding: drafted tokens the target model kept",
        lambda r: r.num_spec_accepted_tokens,
    ),
    (
        "roleserve_spec_decode_verification_steps",
        "Speculative decoding: verifications (one per drafted request and step)",
        lambda r: r.num_spec_verifications,
    ),
    (
        "roleserve_spec_decode_emitted_tokens",
        "Speculative decoding: tokens the verifications emitted (kept drafted tokens + one each)",
        lambda r: r.num_spec_emitted_tokens,
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
        for name, doc, value_of in _COUNTERS:
            counter = CounterMetricFamily(name, doc, labels=labels)
            for instance, report in reports:
                counter.add_metric(("scheduler", str(instance)), value_of(report))
            yield counter
