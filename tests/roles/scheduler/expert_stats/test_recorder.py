import pytest
import torch

from roles.scheduler.expert_stats.balancedness import BalancednessTracker, pass_balancedness
from roles.scheduler.expert_stats.recorder import NoopRecorder, RecorderOff, make_recorder
from roles.scheduler.moe.placement import ExpertPlacement

PLACEMENT = ExpertPlacement.contiguous(num_layers=2, num_experts=4, num_ranks=2)


def run_pass(recorder, pass_id, routes, positions=None):
    recorder.begin_pass(pass_id, positions)
    for layer, ids in enumerate(routes):
        recorder.on_route(layer, torch.tensor(ids))
    return recorder.end_pass()


def test_off_is_a_noop_that_says_how_to_turn_it_on():
    recorder = make_recorder("off", PLACEMENT, 8)
    assert type(recorder) is NoopRecorder and run_pass(recorder, 0, [[[0, 1]], [[2, 3]]]) is None
    with pytest.raises(RecorderOff, match="expert_distribution_recorder_mode"):
        recorder.start()


def test_stat_counts_every_pass_and_keeps_those_recorded_in_a_ring():
    recorder = make_recorder("stat", PLACEMENT, buffer_size=2)
    counts = run_pass(recorder, 0, [[[0, 1], [0, 2]], [[3, 3], [1, 3]]])
    assert counts.tolist() == [[2, 1, 1, 0], [0, 1, 0, 3]]
    recorder.start()
    for pass_id in (1, 2, 3):  # the ring keeps the last two
        run_pass(recorder, pass_id, [[[0, 1]], [[2, 3]]])
    recorder.stop()
    run_pass(recorder, 4, [[[0, 0]], [[0, 0]]])  # not recorded
    dump = recorder.dump()
    assert dump["pass_ids"] == [2, 3]
    assert dump["logical_counts"] == [[2, 2, 0, 0], [0, 0, 2, 2]]
    assert (dump["mode"], dump["num_layers"], dump["num_logical_experts"]) == ("stat", 2, 4)


def test_per_pass_and_per_token_keep_their_records():
    per_pass = make_recorder("per_pass", PLACEMENT, 8)
    per_pass.start()
    run_pass(per_pass, 7, [[[0, 1]], [[2, 3]]])
    assert per_pass.dump()["per_pass"] == [{"pass_id": 7, "logical_counts": [[1, 1, 0, 0], [0, 0, 1, 1]]}]
    per_token = make_recorder("per_token", PLACEMENT, 8)
    per_token.start()
    run_pass(per_token, 9, [[[0, 1], [2, 3]], [[1, 2], [3, 0]]], positions=torch.tensor([5, 0]))
    routes = per_token.dump()["per_token"]
    assert routes[0] == {"pass_id": 9, "layer": 0, "positions": [5, 0], "topk_ids": [[0, 1], [2, 3]]}
    assert len(routes) == 2


def test_replicas_fold_into_their_logical_expert():
    # 4 slots over 2 ranks; logical expert 0 is replicated on both ranks (slots 0 and 2)
    placement = ExpertPlacement(torch.tensor([[0, 1, 0, 2]]), num_ranks=2)
    physical = torch.tensor([[3, 1, 5, 2]])
    assert placement.logical_counts(physical).tolist() == [[8, 1, 2]]
    assert placement.rank_counts(physical).tolist() == [[4, 7]]


def test_balancedness_is_mean_over_max_averaged_over_layers_with_rolling_windows():
    even = torch.tensor([[4, 4], [2, 2]])
    skewed = torch.tensor([[8, 0], [8, 0]])
    assert pass_balancedness(even) == pytest.approx(1.0)
    assert pass_balancedness(skewed) == pytest.approx(0.5, abs=1e-5)
    tracker = BalancednessTracker(windows=(1, 2))
    tracker.observe(0, even)
    report = tracker.observe(1, skewed)
    assert report.current == pytest.approx(0.5, abs=1e-5)
    assert report.rolling[1] == pytest.approx(0.5, abs=1e-5)
    assert report.rolling[2] == pytest.approx(0.75, abs=1e-5)


def test_an_unknown_mode_and_an_uneven_split_are_refused():
    with pytest.raises(ValueError, match="unknown expert distribution recorder mode 'trace'"):
        make_recorder("trace", PLACEMENT, 8)
    with pytest.raises(ValueError, match="cannot be split evenly over 3 ranks"):
        ExpertPlacement.contiguous(1, 4, num_ranks=3)


def test_the_reporter_logs_every_n_passes(caplog):
    from roles.scheduler.expert_stats.reporter import BalancednessReporter

    reporter = BalancednessReporter(PLACEMENT, log_every=2)
    counts = torch.tensor([[4, 0, 0, 0], [1, 1, 1, 1]])  # layer 0 all on rank 0; layer 1 even
    with caplog.at_level("INFO", logger="roleserve.expert_balancedness"):
        for pass_id in range(4):
            report = reporter.observe(pass_id, counts)
    assert report.current == pytest.approx((0.5 + 1.0) / 2, abs=1e-5)
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2 and lines[-1].startswith("expert balancedness at pass 3: 0.7500 (last 10: 0.7500")
