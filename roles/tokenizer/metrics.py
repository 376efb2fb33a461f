"""What /metrics shows, through prometheus_client. Every series is labelled with the role that measured it.

The tokenizer workers share one port, so a scrape reaches any one of them: what they record (requests,
latencies, tokens, their own in-flight counts) goes to files in a directory they share (multiprocess
mode), and a scrape adds up every worker's files. What the schedulers report (every worker receives every
LoadReport) is read at scrape time by collectors instead, never summed across workers.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector

from roles.protocol import LoadReport
from roles.tokenizer.balancedness_metrics import BalancednessCollector, RebalanceCollector
from roles.tokenizer.metrics_dir import share_metrics_dir
from roles.tokenizer.scheduler_metrics import SchedulerLoadCollector

LATENCY_BUCKETS_S = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)


def _histogram(name: str, doc: str, role: str) -> Histogram:
    return Histogram(name, doc, ("role",), buckets=LATENCY_BUCKETS_S, registry=None).labels(role)


class ServingMetrics:
    """The tokenizer's metrics collector (observability.stat_loggers may name a subclass). A subclass adds
    a metric of its own by building it in __init__ with ``registry=None`` (it is then recorded in the shared
    files like these) or by adding a collector read at scrape time in ``collectors``."""

    def __init__(self, instance: int, metrics_dir: str):
        share_metrics_dir(metrics_dir)  # before any metric is built
        self.metrics_dir = metrics_dir
        self.instance = str(instance)
        # Recorded metrics are registered nowhere: a scrape reads them from the files (render).
        self.requests = Counter(
            "roleserve_requests",
            "HTTP requests by route and status",
            ("role", "endpoint", "status"),
            registry=None,
        )
        self.e2e_latency = Histogram(
            "roleserve_e2e_request_latency_seconds",
            "Completion requests from arrival to the last token",
            ("role", "endpoint"),
            buckets=LATENCY_BUCKETS_S,
            registry=None,
        )
        self.ttft = _histogram("roleserve_time_to_first_token_seconds", "Time to first token", "tokenizer")
        self.itl = _histogram(
            "roleserve_inter_token_latency_seconds",
            "Time between consecutive tokens of a choice",
            "tokenizer",
        )
        # Measured by the scheduler (sent on a request's first token), recorded here.
        self.queue_time = _histogram(
            "roleserve_request_queue_time_seconds",
            "Time a request waited before it was first scheduled",
            "scheduler",
        )
        self.prompt_tokens = Counter(
            "roleserve_prompt_tokens", "Prompt tokens processed", ("role",), registry=None
        ).labels("tokenizer")
        self.generated_tokens = Counter(
            "roleserve_generation_tokens",
            "Tokens generated (rate() gives tokens/s)",
            ("role",),
            registry=None,
        ).labels("tokenizer")
        # One writer per instance label; a restarted worker's predecessor is forgotten (share_metrics_dir).
        self.in_flight = self._worker_gauge(
            "roleserve_requests_in_flight", "Requests in flight in a tokenizer"
        )
        self.embeddings_in_flight = self._worker_gauge(
            "roleserve_embeddings_in_flight", "Embeddings a tokenizer waits on an encoder for"
        )
        self.dropped_frames = Counter(
            "roleserve_tokenizer_dropped_frames",
            "Malformed IPC frames a tokenizer dropped",
            ("role", "instance"),
            registry=None,
        ).labels("tokenizer", self.instance)
        self._num_dropped_counted = 0

    def _worker_gauge(self, name: str, doc: str):
        gauge = Gauge(name, doc, ("role", "instance"), multiprocess_mode="livemostrecent", registry=None)
        child = gauge.labels("tokenizer", self.instance)
        child.set(0)  # a most-recent gauge shows nothing until it is set
        return child

    def note_worker(self, num_in_flight: int, num_embeddings_in_flight: int, num_dropped_frames: int) -> None:
        """This worker's own figures, written where every worker's scrape reads them."""
        self.in_flight.set(num_in_flight)
        self.embeddings_in_flight.set(num_embeddings_in_flight)
        self.dropped_frames.inc(num_dropped_frames - self._num_dropped_counted)
        self._num_dropped_counted = num_dropped_frames

    def note_completion(self, endpoint: str, num_tokens: int, seconds: float) -> None:
        """A completion request ended (however it ended) after ``seconds`` with ``num_tokens`` generated."""
        self.generated_tokens.inc(num_tokens)
        self.e2e_latency.labels("tokenizer", endpoint).observe(seconds)

    def collectors(self, reports: dict[int, LoadReport], exports_balancedness: bool) -> list:
        """What a scrape reads besides the shared files: the schedulers' latest load reports."""
        found = [SchedulerLoadCollector(reports), RebalanceCollector(reports)]
        if exports_balancedness:
            found.append(BalancednessCollector(reports))
        return found

    def render(self, reports: dict[int, LoadReport], exports_balancedness: bool = False) -> bytes:
        """The Prometheus text exposition (prometheus_client.CONTENT_TYPE_LATEST) of one scrape."""
        registry = CollectorRegistry()
        MultiProcessCollector(registry, self.metrics_dir)
        for collector in self.collectors(reports, exports_balancedness):
            registry.register(collector)
        return generate_latest(registry)
