"""The expert_backup and live rebalancing through the real server: two expert-parallel ranks take their
experts from the backup; a rebalance on a skewed mix raises the window's balancedness, moves experts
through the backup, and every greedy answer stays what it was. Once with an HF folder in exact float32,
once with a GGUF whose experts are Q4_K blocks in auto: the backup, the shards and the moves carry the
file's blocks as they are."""

from __future__ import annotations

import httpx
import pytest
from serve_harness import ServeProcess
from server_probes import greedy_texts_at_once, metrics

from conftest import tiny_config
from tests.moe_checkpoint import write_mixtral_gguf, write_tiny_mixtral

# Skewed: a few prompts made of the same few words, sent at once so both ranks work in the same passes.
PROMPTS = ["the the the the the", "a a a a a a a", "the a the a the a", "Hello there", "One two three"]


@pytest.fixture(scope="module", params=["exact", "auto"])
def server(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny-mixtral")
    if request.param == "exact":
        model = write_tiny_mixtral(folder)
    else:  # K-quant experts need 256-wide rows
        hf = write_tiny_mixtral(folder / "hf", hidden_size=256, intermediate_size=256)
        model = write_mixtral_gguf(hf, folder / "mixtral-q4_k.gguf", expert_type="Q4_K")
    config = tiny_config(
        model,
        parallel={"ep_size": 2},
        expert_backup={"enabled": True},
        exec={
            "weight_dtype": request.param,
            # The skew PROMPTS make on this random model's routing holds with int16 inputs; mixed's int8 O and
            # down projections route its tokens otherwise (in one run: evenly, nothing to rebalance).
            "activation_dtype": "int16",
            "moe": {"num_redundant_experts": 2, "eplb_min_rebalance_balancedness": 1.0},
        },
    )
    with ServeProcess(tmp_path_factory.mktemp("rebalance-serve"), config) as running:
        yield running


def complete_all(server: ServeProcess) -> list[str]:
    return greedy_texts_at_once(server, PROMPTS, 8)


def test_the_backup_runs_as_a_role_and_the_ranks_map_their_experts_from_it(server):
    processes = httpx.get(server.url + "/roles", timeout=30).json()["processes"]
    backup = next(p for p in processes if p["role"] == "expert_backup")
    assert backup["instance"] == 0
    assert "weights of" in server.output and "mapped from roleserve-eb-" in server.output


def test_a_rebalance_raises_balancedness_and_keeps_every_answer(server):
    before = complete_all(server)
    response = httpx.post(server.url + "/admin/eplb/rebalance", timeout=120)
    assert response.status_code == 200, response.text
    replicas = response.json()["replicas"]
    assert [r["instance"] for r in replicas] == [0, 1]
    outcome = replicas[0]
    assert outcome["applied"] is True, outcome
    assert outcome["balancedness_after"] >= outcome["balancedness_before"]
    assert outcome["balancedness_before"] == replicas[1]["balancedness_before"]  # one plan for all ranks
    assert sum(r["experts_moved"] for r in replicas) > 0  # the redundant slots were filled from the backup
    assert complete_all(server) == before
    samples = metrics(server)
    applied = [
        v for k, v in samples.items() if k.startswith("roleserve_eplb_rebalances_total") and "applied" in k
    ]
    assert applied and min(applied) >= 1
    assert "rebalanced experts: balancedness" in server.output


def test_without_the_backup_a_rebalance_is_refused_with_what_it_needs(tmp_path):
    model = write_tiny_mixtral(tmp_path / "mixtral")
    with ServeProcess(tmp_path / "serve", tiny_config(model, parallel={"ep_size": 2})) as running:
        response = httpx.post(running.url + "/admin/eplb/rebalance", timeout=60)
    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "expert_rebalance_unavailable" and "expert_backup.enabled" in error["message"]


def test_an_interval_rebalance_is_skipped_while_balancedness_is_above_the_minimum(tmp_path):
    """Every 5 passes, with a minimum of 0: each one finds the window balanced enough and skips."""
    model = write_tiny_mixtral(tmp_path / "mixtral")
    config = tiny_config(
        model,
        parallel={"ep_size": 2},
        expert_backup={"enabled": True},
        exec={"moe": {"eplb_rebalance_interval_passes": 5, "eplb_min_rebalance_balancedness": 0.0}},
    )
    with ServeProcess(tmp_path / "serve", config) as running:
        complete_all(running)
        skipped = [
            v
            for k, v in metrics(running).items()
            if k.startswith("roleserve_eplb_rebalances_total") and 'result="skipped"' in k
        ]
        output = running.output
    assert len(skipped) == 2 and min(skipped) >= 1  # both ranks, at the same passes
    assert "rebalance skipped: balancedness" in output and "eplb_min_rebalance_balancedness=0" in output
