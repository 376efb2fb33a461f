from roles.protocol import LoadReport
from roles.tokenizer.metrics import ServingMetrics


def test_prometheus_text_has_labelled_counters_gauges_and_cumulative_histograms():
    metrics = ServingMetrics(0)
    metrics.requests.inc("tokenizer", "/v1/completions", "200")
    metrics.requests.inc("tokenizer", "/v1/completions", "200")
    metrics.ttft.observe(0.02, "tokenizer")
    metrics.ttft.observe(3.0, "tokenizer")
    metrics.update_scheduler_load(
        {0: LoadReport(0, num_running=2, num_waiting=4, num_kv_pages_used=5, num_kv_pages_total=10)}
    )
    text = metrics.render()
    assert 'roleserve_requests_total{role="tokenizer",endpoint="/v1/completions",status="200"} 2' in text
    assert 'roleserve_time_to_first_token_seconds_bucket{role="tokenizer",le="0.025"} 1' in text
    assert 'roleserve_time_to_first_token_seconds_bucket{role="tokenizer",le="+Inf"} 2' in text
    assert 'roleserve_time_to_first_token_seconds_count{role="tokenizer"} 2' in text
    assert 'roleserve_scheduler_queue_depth{role="scheduler",instance="0"} 4' in text
    assert 'roleserve_kv_cache_usage_ratio{role="scheduler",instance="0"} 0.5' in text
    assert "# TYPE roleserve_request_latency_seconds histogram" in text
