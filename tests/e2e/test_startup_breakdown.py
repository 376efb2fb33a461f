"""`serve --log-level debug` says where each role's start-up went: the role's own phases up to READY (its
process start, publishing the config, imports, its build steps) and, from the launcher, the time from spawn
to READY."""

from __future__ import annotations

import re

from serve_harness import ServeProcess


def test_each_role_logs_its_start_up_phases_at_debug_level(tmp_path):
    config = {"observability": {"log_level": "debug"}, "memory": {"kv_cache_tokens": 2048}}
    with ServeProcess(tmp_path, config, ready_timeout_s=240) as server:
        output = server.output
    found = re.findall(r"(\w+)\[\d+\] start-up: READY [\d.]+ s after the process started: (.*)", output)
    phases = dict(found)  # by role: "scheduler[0]" is role scheduler, instance 0
    assert {"scheduler", "tokenizer"} <= set(phases), output
    for name in ("process start to role code", "publish the config", "import roles.scheduler.process"):
        assert name in phases["scheduler"]
    assert "load the model" in phases["scheduler"] and "build the engine" in phases["scheduler"]
    assert "load the tokenizer" in phases["tokenizer"]
    spawned = re.findall(r"(\w+)\[\d+\] start-up: READY [\d.]+ s after the launcher spawned it", output)
    assert set(phases) <= set(spawned), output
