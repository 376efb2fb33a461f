"""`serve --log-level debug` says where each role's start-up went: the role's own phases up to READY (its
process start, publishing the config, imports, its build steps), from the launcher the time from spawn to
READY, and the launcher's own phases up to the moment every role is READY."""

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
    for name in ("process start to role code", "publish the config", "load the model", "build the engine"):
        assert name in phases["scheduler"]
    # The scheduler and the tokenizer are forked from the preloaded parent, which imported their modules.
    assert "import roles.scheduler.process" not in phases["scheduler"], phases["scheduler"]
    assert "import roles.tokenizer.process" not in phases["tokenizer"], phases["tokenizer"]
    assert "load the tokenizer" in phases["tokenizer"]
    spawned = re.findall(r"(\w+)\[\d+\] start-up: READY [\d.]+ s after the launcher spawned it", output)
    assert set(phases) <= set(spawned), output
    launcher = re.search(r"launcher start-up: READY [\d.]+ s after the process started: (.*)", output)
    assert launcher is not None, output
    for name in ("resolve the config", "spawn every role and wait for READY"):
        assert name in launcher.group(1)
