"""The tokenizer's metrics: several worker processes recording into one dir, read by one scrape; the
schedulers' load as gauges read at scrape time; label values escaped by the library."""

from __future__ import annotations

import multiprocessing
import os

from prometheus_client.parser import text_string_to_metric_families

from roles.protocol import LoadReport
from roles.tokenizer.metrics import ServingMetrics


def samples(text: bytes) -> dict[tuple[str, frozenset], float]:
    """(sample name, its labels) -> value, for every sample of a scrape."""
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text.decode())
        for s in family.samples
    }


def value(scraped: dict, name: str, **labels) -> float | None:
    return scraped.get((name, frozenset((k, str(v)) for k, v in labels.items())))


def record_as_worker(metrics_dir: str, instance: int) -> None:
    """What one tokenizer worker process records: a request, a first token, a token gap, requests in flight."""
    metrics = ServingMetrics(instance, metrics_dir)
    metrics.requests.labels("tokenizer", "/v1/completions", "200").inc()
    metrics.ttft.observe(0.02)
    metrics.itl.observe(3.0)
    metrics.note_worker(num_in_flight=instance + 1, num_embeddings_in_flight=0, num_dropped_frames=2)


def run_workers(metrics_dir: str, instances: list[int]) -> None:
    spawn = multiprocessing.get_context("spawn")
    workers = [spawn.Process(target=record_as_worker, args=(metrics_dir, i)) for i in instances]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0


def test_one_scrape_adds_up_every_worker_and_forgets_the_gauges_of_dead_ones(tmp_path):
    run_workers(str(tmp_path), [0, 1])
    metrics = ServingMetrics(2, str(tmp_path))  # a third worker, started after the other two ended
    metrics.requests.labels("tokenizer", "/v1/completions", "200").inc()
    metrics.note_worker(num_in_flight=5, num_embeddings_in_flight=1, num_dropped_frames=0)
    scraped = samples(metrics.render({}))
    completions = {"role": "tokenizer", "endpoint": "/v1/completions", "status": "200"}
    assert value(scraped, "roleserve_requests_total", **completions) == 3  # counts of dead workers stay
    assert value(scraped, "roleserve_time_to_first_token_seconds_count", role="tokenizer") == 2
    assert value(scraped, "roleserve_time_to_first_token_seconds_bucket", role="tokenizer", le="0.025") == 2
    assert value(scraped, "roleserve_inter_token_latency_seconds_bucket", role="tokenizer", le="2.5") == 0
    assert value(scraped, "roleserve_inter_token_latency_seconds_bucket", role="tokenizer", le="+Inf") == 2
    assert value(scraped, "roleserve_tokenizer_dropped_frames_total", role="tokenizer", instance=1) == 2
    # The two ended workers' in-flight gauges went with them; the live one's stays.
    assert value(scraped, "roleserve_requests_in_flight", role="tokenizer", instance=0) is None
    assert value(scraped, "roleserve_requests_in_flight", role="tokenizer", instance=1) is None
    assert value(scraped, "roleserve_requests_in_flight", role="tokenizer", instance=2) == 5
    assert value(scraped, "roleserve_embeddings_in_flight", role="tokenizer", instance=2) == 1


def test_a_restarted_worker_shows_its_own_gauges_under_its_instance(tmp_path):
    run_workers(str(tmp_path), [0])
    metrics = ServingMetrics(0, str(tmp_path))  # instance 0 again, in a new process (this one)
    metrics.note_worker(num_in_flight=0, num_embeddings_in_flight=0, num_dropped_frames=0)
    scraped = samples(metrics.render({}))
    assert value(scraped, "roleserve_requests_in_flight", role="tokenizer", instance=0) == 0
    assert value(scraped, "roleserve_tokenizer_dropped_frames_total", role="tokenizer", instance=0) == 2
    assert not any(name.endswith("_in_flight") and dict(labels).get("pid") for name, labels in scraped)


def test_scheduler_load_is_read_from_the_latest_reports_at_scrape_time(tmp_path):
    metrics = ServingMetrics(0, str(tmp_path))
    reports = {
        0: LoadReport(
            0, 2, 4, 5, 10, num_dropped_frames=3, num_prompt_tokens=40, num_cached_prompt_tokens=10
        ),
        1: LoadReport(
            1,
            1,
            0,
            0,
            10,
            num_spec_drafted_tokens=40,
            num_spec_accepted_tokens=30,
            num_spec_verifications=12,
            num_spec_emitted_tokens=42,
        ),
    }
    scraped = samples(metrics.render(reports))
    zero, one = {"role": "scheduler", "instance": 0}, {"role": "scheduler", "instance": 1}
    assert value(scraped, "roleserve_scheduler_running_requests", **zero) == 2
    assert value(scraped, "roleserve_scheduler_waiting_requests", **zero) == 4
    assert value(scraped, "roleserve_kv_cache_usage_ratio", **zero) == 0.5
    assert value(scraped, "roleserve_prefix_cache_hit_ratio", **zero) == 0.25
    assert value(scraped, "roleserve_prefix_cache_hit_ratio", **one) == 0  # no prompt yet
    assert value(scraped, "roleserve_scheduler_dropped_frames_total", **zero) == 3
    assert value(scraped, "roleserve_scheduler_running_requests", **one) == 1
    assert not any(name.startswith("roleserve_eplb_") for name, _ in scraped)  # no MoE, no rebalancer
    # Speculative decoding: counters from which acceptance and tokens per step follow, and both ratios.
    assert value(scraped, "roleserve_spec_decode_draft_tokens_total", **one) == 40
    assert value(scraped, "roleserve_spec_decode_accepted_tokens_total", **one) == 30
    assert value(scraped, "roleserve_spec_decode_verification_steps_total", **one) == 12
    assert value(scraped, "roleserve_spec_decode_acceptance_ratio", **one) == 0.75
    assert value(scraped, "roleserve_spec_decode_tokens_per_step", **one) == 3.5
    assert value(scraped, "roleserve_spec_decode_acceptance_ratio", **zero) == 0  # nothing drafted
    assert value(scraped, "roleserve_spec_decode_draft_tokens_total", **zero) == 0


def test_label_values_are_escaped_and_every_series_names_its_role(tmp_path):
    metrics = ServingMetrics(0, str(tmp_path))
    odd = 'a "quoted" \\ path\nwith a newline'
    metrics.requests.labels("tokenizer", odd, "404").inc()
    text = metrics.render({0: LoadReport(0, 0, 0, 0, 1)})
    assert b'endpoint="a \\"quoted\\" \\\\ path\\nwith a newline"' in text
    scraped = samples(text)
    assert value(scraped, "roleserve_requests_total", role="tokenizer", endpoint=odd, status="404") == 1
    assert all(dict(labels).get("role") in ("tokenizer", "scheduler") for _, labels in scraped)


def test_metrics_built_for_a_new_dir_record_there(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    os.mkdir(first), os.mkdir(second)
    ServingMetrics(0, str(first)).requests.labels("tokenizer", "/health", "200").inc()
    metrics = ServingMetrics(0, str(second))
    metrics.requests.labels("tokenizer", "/metrics", "200").inc()
    scraped = samples(metrics.render({}))
    assert (
        value(scraped, "roleserve_requests_total", role="tokenizer", endpoint="/metrics", status="200") == 1
    )
    assert (
        value(scraped, "roleserve_requests_total", role="tokenizer", endpoint="/health", status="200") is None
    )
