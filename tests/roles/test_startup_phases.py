"""A role's start-up phases: each mark ends a phase where the previous one ended, and the READY report names
every phase with the process's age."""

from __future__ import annotations

import logging
import subprocess
import sys
import time

from roles.startup_phases import StartupPhases, process_age_s


def test_a_fresh_process_is_younger_than_this_one():
    code = "from roles.startup_phases import process_age_s; print(process_age_s())"
    started = time.monotonic()
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    age = float(child.stdout)
    assert 0 < age <= time.monotonic() - started + 0.02  # the boot clock counts in 10 ms ticks
    assert process_age_s() > age


def test_marks_end_phases_in_order_and_the_report_names_them_all(caplog):
    phases = StartupPhases()
    time.sleep(0.01)
    phases.mark("load the model")
    phases.mark("build the engine")
    names = [name for name, _ in phases.phases]
    assert names == ["process start to role code", "load the model", "build the engine"]
    assert phases.phases[1][1] >= 0.01 and all(seconds >= 0 for _, seconds in phases.phases)
    with caplog.at_level(logging.DEBUG, logger="roleserve.startup"):
        phases.report("scheduler")
    [line] = [r.getMessage() for r in caplog.records]
    assert line.startswith("scheduler start-up: READY ") and "after the process started: " in line
    assert "load the model 0.0" in line and "process start to role code" in line
