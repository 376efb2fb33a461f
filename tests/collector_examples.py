"""Metrics collectors that tests register through observability.stat_loggers (imported by spawned roles too)."""

from roles.tokenizer.metrics import ServingMetrics


class CountingMetrics(ServingMetrics):
    """The front's own collector plus one line saying which class collected."""

    def render(self) -> str:
        return super().render() + "# collected by tests.collector_examples.CountingMetrics\n"


class NotACollector:
    pass
