"""observability.stat_loggers through the real server: the HTTP front collects with the registered class."""

from __future__ import annotations

import httpx
from serve_harness import ServeProcess

from conftest import tiny_config
from tests.guards.project_files import ROOT


def test_the_front_collects_metrics_with_the_registered_class(tiny_model, tmp_path):
    config = tiny_config(
        tiny_model, observability={"stat_loggers": {"tokenizer": "tests.collector_examples:CountingMetrics"}}
    )
    with ServeProcess(tmp_path, config, env={"PYTHONPATH": str(ROOT)}) as server:
        metrics = httpx.get(server.url + "/metrics", timeout=30).text
        assert "# collected by tests.collector_examples.CountingMetrics" in metrics
        assert "roleserve_requests_total" in metrics  # the subclass still renders everything the front does
