import signal

from launcher.children import describe_exit


def test_exit_descriptions_name_code_signal_and_oom_hint():
    assert describe_exit(3) == "exited with code 3"
    assert describe_exit(-signal.SIGTERM) == "was killed by signal SIGTERM"
    killed = describe_exit(-signal.SIGKILL)
    assert killed.startswith("was killed by signal SIGKILL") and "out-of-memory" in killed
