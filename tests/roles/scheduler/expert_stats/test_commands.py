import json

import pytest
import torch

from roles.protocol import ExpertCommand, LoadReport
from roles.scheduler.expert_stats.commands import merge_rank_dumps, run_recording_command
from roles.scheduler.expert_stats.recorder import make_recorder
from roles.scheduler.expert_stats.reporter import BalancednessReporter
from roles.scheduler.moe.placement import ExpertPlacement
from roles.tokenizer.balancedness_metrics import BalancednessCollector, RebalanceCollector

PLACEMENT = ExpertPlacement.contiguous(num_layers=1, num_experts=4, num_ranks=2)


def test_start_stop_dump_write_a_documented_file(tmp_path):
    recorder = make_recorder("stat", PLACEMENT, 8)
    assert run_recording_command(recorder, ExpertCommand("start", "q1", 0), 3, str(tmp_path)).error is None
    recorder.begin_pass(0)
    recorder.on_route(0, torch.tensor([[0, 3]]))
    recorder.end_pass()
    run_recording_command(recorder, ExpertCommand("stop", "q2", 0), 3, str(tmp_path))
    reply = run_recording_command(recorder, ExpertCommand("dump", "q3", 0), 3, str(tmp_path))
    assert (reply.query_id, reply.instance, reply.error) == ("q3", 3, None)
    dump = json.loads(open(reply.path, encoding="utf-8").read())
    assert dump["instance"] == 3 and dump["logical_counts"] == [[1, 0, 0, 1]] and dump["pass_ids"] == [0]


def test_an_off_recorder_and_an_unknown_action_answer_with_an_error(tmp_path):
    off = make_recorder("off", PLACEMENT, 8)
    assert (
        "recorder is off"
        in run_recording_command(off, ExpertCommand("start", "q", 0), 0, str(tmp_path)).error
    )
    bad = run_recording_command(off, ExpertCommand("rewind", "q", 0), 0, str(tmp_path))
    assert bad.error == "unknown action 'rewind'"


def _samples(collector) -> dict[str, float]:
    """'name{label=value,...}' (labels in name order) -> value, of every family the collector yields."""
    return {
        sample.name + "{" + ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items())) + "}": sample.value
        for family in collector.collect()
        for sample in family.samples
    }


def test_the_front_collects_what_the_scheduler_reported():
    reporter = BalancednessReporter(PLACEMENT, log_every=None, exports=True)
    reporter.observe(0, torch.tensor([[3, 1, 0, 0]]))  # rank 0 computed 4 tokens, rank 1 none
    report = LoadReport(1, 0, 0, 0, 1, expert_balancedness=reporter.snapshot())
    samples = _samples(BalancednessCollector({1: report}))
    assert samples["roleserve_eplb_balancedness_count{instance=1,role=scheduler}"] == 1
    assert samples["roleserve_eplb_balancedness_sum{instance=1,role=scheduler}"] == pytest.approx(
        0.5, abs=1e-5
    )
    assert samples["roleserve_eplb_tokens_per_rank_bucket{instance=1,layer=0,le=1.0,role=scheduler}"] == 1
    assert samples["roleserve_eplb_tokens_per_rank_bucket{instance=1,layer=0,le=4.0,role=scheduler}"] == 2
    assert samples["roleserve_eplb_tokens_per_rank_bucket{instance=1,layer=0,le=+Inf,role=scheduler}"] == 2
    assert samples["roleserve_eplb_tokens_per_rank_sum{instance=1,layer=0,role=scheduler}"] == 4
    assert _samples(BalancednessCollector({0: LoadReport(0, 0, 0, 0, 1)})) == {}  # families, no samples
    assert _samples(RebalanceCollector({0: report})) == {}  # it cannot rebalance: no family at all
    rebalancing = LoadReport(0, 0, 0, 0, 1, expert_rebalances={"applied": 2, "skipped": 1})
    counts = _samples(RebalanceCollector({0: rebalancing}))
    assert counts["roleserve_eplb_rebalances_total{instance=0,result=applied,role=scheduler}"] == 2
    assert counts["roleserve_eplb_rebalances_total{instance=0,result=skipped,role=scheduler}"] == 1


def test_the_dumps_of_expert_parallel_ranks_merge_pass_by_pass():
    dumps = []
    for rank, routed in enumerate(([[0, 1]], [[1, 3]])):
        recorder = make_recorder("per_token", PLACEMENT, 8)
        recorder.start()
        recorder.begin_pass(7, torch.tensor([rank]))
        recorder.on_route(0, torch.tensor(routed))
        recorder.end_pass()
        dumps.append(recorder.dump())
    merged = merge_rank_dumps(dumps)
    assert merged["ranks"] == 2 and merged["pass_ids"] == [7]
    assert merged["logical_counts"] == [[1, 2, 0, 1]]
    assert [(route["rank"], route["topk_ids"]) for route in merged["per_token"]] == [
        (0, [[0, 1]]),
        (1, [[1, 3]]),
    ]
    dumps[1]["pass_ids"] = [8]
    with pytest.raises(ValueError, match="different passes"):
        merge_rank_dumps(dumps)
