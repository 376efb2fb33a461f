"""The real Supervisor over its real control socket, with tiny spawned children (tests/launcher/child_entries)."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from launcher.role_list import LAUNCHER
from launcher.supervisor import StartupFailed, Supervisor
from roles.child_process import ChildSpec
from runtime_context import publish, resolve
from tests.launcher.child_entries import FOREIGN_FINGERPRINT
from tests.publish_as import TEST_PROJECTION

DEADLINE_S = 60
# A broken READY or exit handling would make start() or supervise() wait forever: fail instead.
pytestmark = pytest.mark.timeout(5 * DEADLINE_S)


def spec(instance: int, entry: str) -> ChildSpec:
    return ChildSpec("test", instance, f"tests.launcher.child_entries:{entry}", TEST_PROJECTION)


@pytest.fixture
def make_supervisor(tmp_path):
    """A published launcher config and a Supervisor on it; every one made is shut down after the test."""
    made: list[Supervisor] = []

    def make(**launcher) -> Supervisor:
        leaves = {"startup_timeout_s": DEADLINE_S, "runtime_dir": str(tmp_path / "run"), **launcher}
        resolved = resolve(sets=[f"launcher.{key}={value}" for key, value in leaves.items()], environ={})
        publish(resolved, role="launcher", projection=LAUNCHER.projection)
        made.append(Supervisor(resolved))
        return made[-1]

    yield make
    for supervisor in made:
        if not supervisor.control.closed:
            supervisor.shutdown()


class SupervisingThread(threading.Thread):
    """supervise() in the background while the test acts on the children; the test thread waits for it."""

    def __init__(self, supervisor: Supervisor):
        super().__init__(name="supervise", daemon=True)
        self.supervisor = supervisor
        self.code: int | None = None

    def run(self) -> None:
        self.code = self.supervisor.supervise()

    def result(self) -> int:
        self.join(DEADLINE_S)
        if self.is_alive():
            self.supervisor.stop_reason = "test deadline"
            self.join(DEADLINE_S)
            raise AssertionError(f"supervise() did not return within {DEADLINE_S} s")
        assert self.code is not None
        return self.code


def pid_of(supervisor: Supervisor, name: str) -> int:
    return supervisor.ready[name].pid


def wait_until(condition, what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen within {DEADLINE_S} s"
        time.sleep(0.05)


def test_start_waits_for_every_ready_with_the_launchers_fingerprint(make_supervisor):
    supervisor = make_supervisor()
    supervisor.start([spec(0, "ready_role"), spec(1, "ready_role")])
    assert sorted(supervisor.ready) == ["test[0]", "test[1]"]
    for name, (_, process) in supervisor.children.by_name.items():
        ready = supervisor.ready[name]
        assert ready.pid == process.pid and process.is_alive()
        assert ready.fingerprint == supervisor.resolved.fingerprint


def test_a_ready_with_a_foreign_fingerprint_refuses_to_serve(make_supervisor):
    supervisor = make_supervisor()
    with pytest.raises(StartupFailed) as failure:
        supervisor.start([spec(0, "ready_role"), spec(1, "foreign_config_role")])
    pid = supervisor.children.by_name["test[1]"][1].pid
    message = str(failure.value)
    assert f"test[1] (pid {pid}) runs config fingerprint {FOREIGN_FINGERPRINT[:16]}" in message
    assert f"the launcher resolved {supervisor.resolved.fingerprint[:16]}" in message
    assert "refusing to serve with mixed configuration" in message
    assert "test[1]" not in supervisor.ready


def test_a_missing_ready_fails_startup_naming_the_setting_and_the_role(make_supervisor):
    supervisor = make_supervisor(startup_timeout_s=1)
    with pytest.raises(StartupFailed) as failure:
        supervisor.start([spec(0, "ready_role"), spec(1, "silent_role")])
    message = str(failure.value)
    assert "not every role reported READY within launcher.startup_timeout_s=1s" in message
    assert "still missing:" in message and "test[1]" in message.split("still missing:")[1]
    assert "raise launcher.startup_timeout_s" in message


def test_a_child_that_dies_during_startup_is_named_with_its_exit(make_supervisor):
    supervisor = make_supervisor()
    with pytest.raises(StartupFailed) as failure:
        supervisor.start([spec(0, "ready_role"), spec(1, "failing_role")])
    pid = supervisor.children.by_name["test[1]"][1].pid
    assert str(failure.value) == f"test[1] (pid {pid}) exited with code 3 during startup"


def test_a_signal_during_startup_interrupts_it(make_supervisor):
    supervisor = make_supervisor()
    supervisor.stop_reason = "SIGTERM"
    with pytest.raises(StartupFailed, match=r"startup interrupted \(SIGTERM\)"):
        supervisor.start([spec(0, "silent_role")])


def test_a_child_exit_stops_the_whole_server_by_default(make_supervisor, capsys, tmp_path):
    supervisor = make_supervisor()
    supervisor.start([spec(0, "ready_role"), spec(1, "ready_role")])
    victim, survivor = pid_of(supervisor, "test[0]"), supervisor.children.by_name["test[1]"][1]
    watcher = SupervisingThread(supervisor)
    watcher.start()
    os.kill(victim, signal.SIGTERM)
    assert watcher.result() == 1
    assert (
        f"roleserve: test[0] (pid {victim}) was killed by signal SIGTERM; shutting everything down "
        "(launcher.restart_policy: never)"
    ) in capsys.readouterr().err
    assert "test[0]" not in supervisor.ready
    supervisor.shutdown()
    assert not survivor.is_alive()  # the other child is stopped too
    assert list((tmp_path / "run").iterdir()) == []  # and the private runtime dir is gone


def test_on_failure_restarts_the_child_until_max_restarts_is_used(make_supervisor, capsys):
    supervisor = make_supervisor(restart_policy="on-failure", max_restarts=1)
    supervisor.start([spec(0, "ready_role")])
    first = pid_of(supervisor, "test[0]")
    watcher = SupervisingThread(supervisor)
    watcher.start()
    os.kill(first, signal.SIGKILL)
    wait_until(
        lambda: "test[0]" in supervisor.ready and pid_of(supervisor, "test[0]") != first,
        "a READY from the restarted test[0]",
    )
    second = pid_of(supervisor, "test[0]")
    assert supervisor.children.by_name["test[0]"][1].pid == second
    os.kill(second, signal.SIGKILL)
    assert watcher.result() == 1
    err = capsys.readouterr().err
    assert f"roleserve: test[0] (pid {first}) was killed by signal SIGKILL" in err
    assert "restarting it (1/1)" in err
    assert f"roleserve: test[0] (pid {second}) was killed by signal SIGKILL" in err
    assert "shutting everything down (1 restarts used)" in err


def test_a_child_that_stops_heartbeating_is_killed_and_stops_the_whole_server(make_supervisor, capsys):
    supervisor = make_supervisor(heartbeat_timeout_s=1)
    supervisor.start([spec(0, "ready_role"), spec(1, "mute_role")])
    mute = supervisor.children.by_name["test[1]"][1]
    watcher = SupervisingThread(supervisor)
    watcher.start()
    assert watcher.result() == 1
    err = capsys.readouterr().err
    assert f"roleserve: test[1] (pid {mute.pid}) sent no heartbeat for " in err
    assert (
        "s (launcher.heartbeat_timeout_s = 1): hung or stopped; shutting everything down "
        "(launcher.restart_policy: never)"
    ) in err
    assert "test[0]" not in err  # the child that heartbeats is not taken for hung
    assert mute.exitcode == -signal.SIGKILL  # killed, as a stopped process must be


def test_on_failure_kills_and_restarts_a_child_that_stops_heartbeating(make_supervisor, capsys):
    supervisor = make_supervisor(heartbeat_timeout_s=1, restart_policy="on-failure", max_restarts=1)
    supervisor.start([spec(0, "mute_role")])
    first = supervisor.children.by_name["test[0]"][1]
    watcher = SupervisingThread(supervisor)
    watcher.start()
    wait_until(
        lambda: "test[0]" in supervisor.ready and pid_of(supervisor, "test[0]") != first.pid,
        "a READY from the restarted test[0]",
    )
    second = pid_of(supervisor, "test[0]")
    assert first.exitcode == -signal.SIGKILL
    assert watcher.result() == 1  # the restarted child goes silent too, and no restart is left
    err = capsys.readouterr().err
    assert f"roleserve: test[0] (pid {first.pid}) sent no heartbeat for " in err
    assert "(launcher.heartbeat_timeout_s = 1): hung or stopped; restarting it (1/1)" in err
    assert f"roleserve: test[0] (pid {second}) sent no heartbeat for " in err
    assert "shutting everything down (1 restarts used)" in err


def test_a_child_that_heartbeats_is_never_taken_for_hung(make_supervisor, capsys):
    supervisor = make_supervisor(heartbeat_timeout_s=1)
    supervisor.start([spec(0, "ready_role")])
    pid = pid_of(supervisor, "test[0]")
    watcher = SupervisingThread(supervisor)
    watcher.start()
    first_heard = supervisor.liveness.last_heard["test[0]"]
    # Heartbeats keep arriving for several timeouts in a row while supervision goes on.
    wait_until(
        lambda: supervisor.liveness.last_heard["test[0]"] > first_heard + 3, "heartbeats over 3 timeouts"
    )
    assert watcher.is_alive() and pid_of(supervisor, "test[0]") == pid
    supervisor.stop_reason = "SIGTERM"
    assert watcher.result() == 0
    assert "sent no heartbeat" not in capsys.readouterr().err


def test_a_stop_request_ends_supervision_cleanly(make_supervisor):
    supervisor = make_supervisor()
    supervisor.start([spec(0, "ready_role")])
    process = supervisor.children.by_name["test[0]"][1]
    watcher = SupervisingThread(supervisor)
    watcher.start()
    supervisor.stop_reason = "SIGTERM"
    assert watcher.result() == 0
    assert process.is_alive()  # supervision ended; stopping the children is shutdown's work
    supervisor.shutdown()
    assert process.exitcode is not None


def test_a_child_that_exits_with_the_stop_signal_is_part_of_the_stop(make_supervisor, capsys):
    # A SIGTERM sent to the whole process group reaches the launcher and its children at once: the launcher's
    # handler sets stop_reason while it polls, and by the poll's end a child has already exited with it.
    supervisor = make_supervisor()
    supervisor.start([spec(0, "ready_role")])
    process = supervisor.children.by_name["test[0]"][1]
    poll = supervisor.poll_control

    def poll_while_the_group_is_signalled(timeout_ms: int) -> None:
        poll(timeout_ms)
        os.kill(process.pid, signal.SIGTERM)
        process.join(10)
        supervisor.stop_reason = "SIGTERM"

    supervisor.poll_control = poll_while_the_group_is_signalled
    assert supervisor.supervise() == 0
    assert process.exitcode is not None
    assert "shutting everything down" not in capsys.readouterr().err
    supervisor.shutdown()


def test_a_child_busy_in_long_steps_is_never_taken_for_hung_nor_stuck(make_supervisor, capsys):
    supervisor = make_supervisor(heartbeat_timeout_s=1, stall_timeout_s=5)
    supervisor.start([spec(0, "busy_role")])
    watcher = SupervisingThread(supervisor)
    watcher.start()
    first_heard = supervisor.liveness.last_heard["test[0]"]
    # Steps of 3 s, each three heartbeat timeouts long: supervision goes on over several of them.
    wait_until(lambda: supervisor.liveness.last_heard["test[0]"] > first_heard + 10, "heartbeats over 10 s")
    assert supervisor.liveness.progress["test[0]"].num_steps >= 2
    assert watcher.is_alive()
    supervisor.stop_reason = "SIGTERM"
    assert watcher.result() == 0
    err = capsys.readouterr().err
    assert "sent no heartbeat" not in err and "stuck" not in err


def test_a_child_that_holds_requests_and_completes_no_step_is_stuck(make_supervisor, capsys):
    supervisor = make_supervisor(heartbeat_timeout_s=30, stall_timeout_s=1)
    supervisor.start([spec(0, "stuck_role")])
    stuck = supervisor.children.by_name["test[0]"][1]
    watcher = SupervisingThread(supervisor)
    watcher.start()
    assert watcher.result() == 1
    err = capsys.readouterr().err
    assert f"roleserve: test[0] (pid {stuck.pid}) holds 1 request(s) but completed no step for " in err
    assert "(launcher.stall_timeout_s = 1): stuck; shutting everything down" in err
    assert stuck.exitcode == -signal.SIGKILL
