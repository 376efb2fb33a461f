"""The expert distribution recorder and balancedness reporting through the real server: two scheduler
replicas serving a tiny Mixtral, recording per token, reporting to the server log and Prometheus."""

from __future__ import annotations

import json

import httpx
import pytest
from serve_harness import ServeProcess
from server_probes import metrics, series

from conftest import tiny_config
from tests.moe_checkpoint import write_tiny_mixtral


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    model = write_tiny_mixtral(tmp_path_factory.mktemp("tiny-mixtral"))
    recordings = tmp_path_factory.mktemp("recordings")
    config = tiny_config(
        model,
        parallel={"dp_size": 2},
        exec={
            "moe": {
                "expert_distribution_recorder_mode": "per_token",
                "recorder_dir": str(recordings),
                "expert_balancedness_report_mode": "both",
                "expert_balancedness_log_every": 1,
            }
        },
    )
    with ServeProcess(tmp_path_factory.mktemp("moe-serve"), config) as running:
        yield running


def admin(server, action: str) -> httpx.Response:
    return httpx.post(f"{server.url}/admin/expert_distribution/{action}", timeout=60)


def complete(server, prompt: str) -> None:
    body = {"model": "tiny", "prompt": prompt, "max_tokens": 4, "temperature": 0}
    assert httpx.post(server.url + "/v1/completions", json=body, timeout=60).status_code == 200


def test_a_recording_of_both_replicas_is_dumped_per_token(server):
    assert admin(server, "start").json()["replicas"] == [{"instance": 0}, {"instance": 1}]
    for prompt in ("Hello there", "Another prompt", "A third one"):
        complete(server, prompt)
    assert admin(server, "stop").status_code == 200
    dumped = admin(server, "dump").json()
    assert dumped["object"] == "expert_distribution.dump"
    assert [replica["instance"] for replica in dumped["replicas"]] == [0, 1]
    total = 0
    for replica in dumped["replicas"]:
        with open(replica["path"], encoding="utf-8") as file:
            dump = json.load(file)
        assert dump["mode"] == "per_token" and dump["instance"] == replica["instance"]
        assert dump["num_layers"] == len(dump["logical_counts"])
        routed = sum(map(sum, dump["logical_counts"]))
        total += routed
        # every token of every recorded pass chose top_k experts in every layer
        tokens = sum(len(route["topk_ids"]) for route in dump["per_token"])
        assert routed == tokens * len(dump["per_token"][0]["topk_ids"][0]) if tokens else routed == 0
        assert all(len(route["positions"]) == len(route["topk_ids"]) for route in dump["per_token"])
    assert total > 0


def test_balancedness_reaches_prometheus_and_the_server_log(server):
    complete(server, "Balance")
    samples = metrics(server)
    who = {"role": "scheduler", "instance": 0}
    assert samples[series("roleserve_eplb_balancedness_count", **who)] >= 1
    assert samples[series("roleserve_eplb_balancedness_rolling", **who, window="10")] > 0
    assert samples[series("roleserve_eplb_tokens_per_rank_bucket", **who, layer=0, le="+Inf")] >= 1
    assert "expert balancedness at pass" in server.output


def test_unknown_action_is_a_404(server):
    response = admin(server, "rewind")
    assert response.status_code == 404 and "unknown action 'rewind'" in response.json()["error"]["message"]
