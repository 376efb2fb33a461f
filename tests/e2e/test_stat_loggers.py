"""observability.stat_loggers through the real server: the HTTP front collects with the registered class."""

from __future__ import annotations

from serve_harness import ServeProcess
from server_probes import metrics, series

from conftest import tiny_config
from tests.guards.project_files import ROOT


def test_the_front_collects_metrics_with_the_registered_class(tiny_model, tmp_path):
    config = tiny_config(
        tiny_model, observability={"stat_loggers": {"tokenizer": "tests.collector_examples:CountingMetrics"}}
    )
    with ServeProcess(tmp_path, config, env={"PYTHONPATH": str(ROOT)}) as server:
        metrics(server)
        samples = metrics(server)
        # The subclass's own counter: each scrape counts itself before it renders ...
        assert samples[series("collector_examples_scrapes_total", role="tokenizer", instance=0)] == 2
        # ... beside everything the front renders.
        assert series("roleserve_scheduler_running_requests", role="scheduler", instance=0) in samples
