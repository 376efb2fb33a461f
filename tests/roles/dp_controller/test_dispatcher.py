import pytest

from roles.dp_controller.process import Dispatcher


def test_round_robin_cycles_and_routes_aborts_to_the_owner():
    dispatcher = Dispatcher(3, "round_robin")
    assert [dispatcher.assign(f"r{i}") for i in range(5)] == [0, 1, 2, 0, 1]
    assert dispatcher.owner_of("r4") == 1
    dispatcher.forget("r4")
    assert dispatcher.owner_of("r4") is None


def test_shortest_queue_picks_the_replica_owning_fewest_requests():
    dispatcher = Dispatcher(2, "shortest_queue")
    assert [dispatcher.assign(f"r{i}") for i in range(4)] == [0, 1, 0, 1]
    dispatcher.forget("r0")
    dispatcher.forget("r2")
    assert dispatcher.assign("r4") == 0
    assert dispatcher.assign("r5") == 0
    assert dispatcher.num_owned == [2, 2]


def test_unknown_policy_is_refused():
    with pytest.raises(ValueError, match="unknown load-balance policy 'random'"):
        Dispatcher(2, "random")


def test_a_replica_with_a_new_process_lost_what_was_sent_to_the_old_one():
    from roles.dp_controller.process import RestartWatch
    from roles.protocol import Generate, LoadReport, SamplingFields

    dispatcher, watch = Dispatcher(2, "round_robin"), RestartWatch()
    for request_id in ("a", "b", "c"):
        dispatcher.assign(request_id)  # a -> 0, b -> 1, c -> 0
        watch.dispatched(Generate(request_id, 0, [1], SamplingFields()))
    first = LoadReport(1, 1, 0, 0, 1, started_at=100.0)
    assert watch.lost(first, dispatcher.owned_by(1)) == []  # the first report of a replica: nothing lost
    assert watch.lost(first, dispatcher.owned_by(1)) == []  # the same process again
    restarted = LoadReport(1, 0, 0, 0, 1, started_at=watch.sent_at["b"] + 1)
    assert watch.lost(restarted, dispatcher.owned_by(1)) == ["b"]
    assert dispatcher.owned_by(0) == ["a", "c"]
