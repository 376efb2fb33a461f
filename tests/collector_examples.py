"""Metrics collectors that tests register through observability.stat_loggers (imported by spawned roles too)."""

from prometheus_client import Counter

from roles.tokenizer.metrics import ServingMetrics


class CountingMetrics(ServingMetrics):
    """The front's own collector plus a metric of its own: the scrapes its worker answered, recorded in the
    workers' shared files like the front's metrics."""

    def __init__(self, instance: int, metrics_dir: str):
        super().__init__(instance, metrics_dir)
        self.scrapes = Counter(
            "collector_examples_scrapes", "Scrapes answered", ("role", "instance"), registry=None
        ).labels("tokenizer", self.instance)

    def render(self, *args, **kwargs) -> bytes:
        self.scrapes.inc()
        return super().render(*args, **kwargs)


class NotACollector:
    pass
