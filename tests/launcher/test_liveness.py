"""launcher/liveness.py on a clock the test moves: late, hung, busy and stuck children."""

from __future__ import annotations

from launcher.liveness import Liveness
from roles.protocol import Heartbeat


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def liveness(clock: Clock) -> Liveness:
    return Liveness(late_after_s=3, heartbeat_timeout_s=10, stall_timeout_s=60, clock=clock)


def test_a_silent_child_is_late_then_hung():
    clock = Clock()
    watch = liveness(clock)
    watch.heard("scheduler[0]", Heartbeat("scheduler", 0))
    clock.now += 4
    assert watch.is_late("scheduler[0]") and watch.hung(["scheduler[0]"]) == []
    clock.now += 7
    [(name, why)] = watch.hung(["scheduler[0]"])
    assert name == "scheduler[0]" and "sent no heartbeat for 11.0 s" in why and "hung or stopped" in why


def test_steps_that_advance_are_busy_however_long_they_take():
    clock = Clock()
    watch = liveness(clock)
    for step in range(10):
        watch.heard("scheduler[0]", Heartbeat("scheduler", 0, num_steps=step, num_unfinished=64))
        clock.now += 50  # each step 50 s, the heartbeat still every moment
        watch.heard("scheduler[0]", Heartbeat("scheduler", 0, num_steps=step, num_unfinished=64))
        assert watch.hung(["scheduler[0]"]) == []


def test_requests_held_and_no_step_completed_is_stuck():
    clock = Clock()
    watch = liveness(clock)
    watch.heard("scheduler[0]", Heartbeat("scheduler", 0, num_steps=5, num_unfinished=2))
    clock.now += 61
    watch.heard("scheduler[0]", Heartbeat("scheduler", 0, num_steps=5, num_unfinished=2))
    [(_, why)] = watch.hung(["scheduler[0]"])
    assert "holds 2 request(s) but completed no step for 61.0 s" in why and "stuck" in why


def test_an_idle_child_is_never_stuck():
    clock = Clock()
    watch = liveness(clock)
    watch.heard("scheduler[0]", Heartbeat("scheduler", 0, num_steps=5, num_unfinished=0))
    clock.now += 500
    watch.heard("scheduler[0]", Heartbeat("scheduler", 0, num_steps=5, num_unfinished=0))
    assert watch.hung(["scheduler[0]"]) == []
    # Requests arrive after a long idle time: the stall is counted from then, not from the last step.
    watch.heard("scheduler[0]", Heartbeat("scheduler", 0, num_steps=5, num_unfinished=1))
    clock.now += 30
    watch.heard("scheduler[0]", Heartbeat("scheduler", 0, num_steps=5, num_unfinished=1))
    assert watch.hung(["scheduler[0]"]) == []


def test_a_role_without_steps_is_judged_by_its_silence_alone():
    clock = Clock()
    watch = liveness(clock)
    watch.heard("tokenizer[0]", Heartbeat("tokenizer", 0))
    clock.now += 9
    watch.heard("tokenizer[0]", Heartbeat("tokenizer", 0))
    assert watch.hung(["tokenizer[0]"]) == [] and not watch.is_late("tokenizer[0]")
