import multiprocessing
import signal

import pytest

from launcher.children import describe_exit, stop_processes
from tests.launcher.child_entries import sleep_until_killed


def test_exit_descriptions_name_code_signal_and_oom_hint():
    assert describe_exit(None) == "is still running"
    assert describe_exit(0) == "exited with code 0"
    assert describe_exit(3) == "exited with code 3"
    assert describe_exit(-signal.SIGTERM) == "was killed by signal SIGTERM"
    assert describe_exit(-signal.SIGSEGV) == "was killed by signal SIGSEGV"
    killed = describe_exit(-signal.SIGKILL)
    assert killed.startswith("was killed by signal SIGKILL") and "out-of-memory" in killed
    assert "dmesg" in killed and "memory.kv_cache_memory_mb" in killed


def spawn_sleeper(ignore_sigterm: bool) -> multiprocessing.Process:
    """A real spawn child like the launcher's, started and past its signal set-up."""
    spawn = multiprocessing.get_context("spawn")
    started = spawn.Event()
    process = spawn.Process(target=sleep_until_killed, args=(started, ignore_sigterm), daemon=True)
    process.start()
    assert started.wait(60), "the child did not start within 60 s"
    return process


@pytest.fixture
def sleepers():
    processes = []

    def start(ignore_sigterm: bool) -> multiprocessing.Process:
        processes.append(spawn_sleeper(ignore_sigterm))
        return processes[-1]

    yield start
    for process in processes:  # whatever a failed test left running
        if process.is_alive():
            process.kill()
        process.join(10)


def test_stop_processes_terminates_a_child_that_honours_sigterm(sleepers):
    process = sleepers(ignore_sigterm=False)
    stop_processes([process], timeout_s=60)
    assert process.exitcode == -signal.SIGTERM


def test_stop_processes_kills_a_child_that_ignores_sigterm(sleepers):
    stubborn, polite = sleepers(ignore_sigterm=True), sleepers(ignore_sigterm=False)
    stop_processes([stubborn, polite], timeout_s=0.5)
    assert polite.exitcode == -signal.SIGTERM
    assert stubborn.exitcode == -signal.SIGKILL  # SIGTERM was ignored: killed after the bounded join


def test_stop_processes_is_safe_to_call_twice_and_on_exited_children(sleepers):
    process = sleepers(ignore_sigterm=False)
    stop_processes([process], timeout_s=60)
    stop_processes([process], timeout_s=60)
    assert process.exitcode == -signal.SIGTERM
