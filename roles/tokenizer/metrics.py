"""A small Prometheus text-format registry: counters, gauges and histograms with labels."""

from __future__ import annotations

import bisect
import threading
from collections import defaultdict

from roles.protocol import LoadReport

LATENCY_BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)


def _labels(names: tuple[str, ...], values: tuple[str, ...]) -> str:
    if not names:
        return ""
    inner = ",".join(f'{n}="{v}"' for n, v in zip(names, values, strict=True))
    return "{" + inner + "}"


class _Metric:
    kind = ""

    def __init__(self, name: str, doc: str, labels: tuple[str, ...] = ()):
        self.name, self.doc, self.label_names = name, doc, labels
        self._lock = threading.Lock()

    def header(self) -> list[str]:
        return [f"# HELP {self.name} {self.doc}", f"# TYPE {self.name} {self.kind}"]


class Counter(_Metric):
    kind = "counter"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.values: dict[tuple[str, ...], float] = defaultdict(float)

    def inc(self, *labels: str, amount: float = 1.0) -> None:
        with self._lock:
            self.values[labels] += amount

    def render(self) -> list[str]:
        return self.header() + [
            f"{self.name}{_labels(self.label_names, k)} {v:g}" for k, v in sorted(self.values.items())
        ]


class Gauge(Counter):
    kind = "gauge"

    def set(self, value: float, *labels: str) -> None:
        with self._lock:
            self.values[labels] = value


class Histogram(_Metric):
    kind = "histogram"

    def __init__(self, name: str, doc: str, labels: tuple[str, ...] = (), buckets=LATENCY_BUCKETS_S):
        super().__init__(name, doc, labels)
        self.buckets = tuple(buckets)
        self.counts: dict[tuple[str, ...], list[int]] = {}
        self.sums: dict[tuple[str, ...], float] = defaultdict(float)

    def observe(self, value: float, *labels: str) -> None:
        with self._lock:
            counts = self.counts.setdefault(labels, [0] * (len(self.buckets) + 1))
            counts[bisect.bisect_left(self.buckets, value)] += 1
            self.sums[labels] += value

    def render(self) -> list[str]:
        lines = self.header()
        names = (*self.label_names, "le")
        for labels, counts in sorted(self.counts.items()):
            running = 0
            for bound, count in zip((*self.buckets, float("inf")), counts, strict=True):
                running += count
                le = "+Inf" if bound == float("inf") else f"{bound:g}"
                lines.append(f"{self.name}_bucket{_labels(names, (*labels, le))} {running}")
            lines.append(f"{self.name}_sum{_labels(self.label_names, labels)} {self.sums[labels]:g}")
            lines.append(f"{self.name}_count{_labels(self.label_names, labels)} {running}")
        return lines


class ServingMetrics:
    """Everything /metrics shows. Labels carry the role (and instance) that measured each figure."""

    def __init__(self, instance: int):
        self.instance = str(instance)
        self.requests = Counter(
            "roleserve_requests_total", "HTTP requests by endpoint and status", ("role", "endpoint", "status")
        )
        self.latency = Histogram(
            "roleserve_request_latency_seconds", "End-to-end request latency", ("role", "endpoint")
        )
        self.ttft = Histogram("roleserve_time_to_first_token_seconds", "Time to first token", ("role",))
        self.prompt_tokens = Counter("roleserve_prompt_tokens_total", "Prompt tokens processed", ("role",))
        self.generated_tokens = Counter(
            "roleserve_generation_tokens_total", "Tokens generated (rate() gives tokens/s)", ("role",)
        )
        self.in_flight = Gauge(
            "roleserve_requests_in_flight", "Requests in flight in this tokenizer", ("role", "instance")
        )
        self.embeddings_in_flight = Gauge(
            "roleserve_embeddings_in_flight", "Embeddings waiting for an encoder", ("role", "instance")
        )
        self.queue_depth = Gauge(
            "roleserve_scheduler_queue_depth", "Requests waiting in a scheduler", ("role", "instance")
        )
        self.running = Gauge(
            "roleserve_scheduler_running_requests", "Requests decoding in a scheduler", ("role", "instance")
        )
        self.kv_usage = Gauge(
            "roleserve_kv_cache_usage_ratio", "Fraction of KV-cache pages in use", ("role", "instance")
        )
        self.dropped_frames = Gauge(
            "roleserve_dropped_frames_total", "Malformed IPC frames dropped", ("role", "instance")
        )

    def update_scheduler_load(self, reports: dict[int, LoadReport]) -> None:
        for instance, report in reports.items():
            label = ("scheduler", str(instance))
            self.queue_depth.set(report.num_waiting, *label)
            self.running.set(report.num_running, *label)
            self.dropped_frames.set(report.num_dropped_frames, *label)
            self.kv_usage.set(report.kv_usage, *label)

    def render(self) -> str:
        metrics = (
            self.requests,
            self.latency,
            self.ttft,
            self.prompt_tokens,
            self.generated_tokens,
            self.in_flight,
            self.embeddings_in_flight,
            self.queue_depth,
            self.running,
            self.kv_usage,
            self.dropped_frames,
        )
        return "\n".join(line for metric in metrics for line in metric.render()) + "\n"
