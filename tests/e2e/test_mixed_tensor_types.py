"""`serve --model` on a GGUF mixing every tensor type (a K-quant file's mix and the rest): greedy output over
HTTP equals the in-process engine on the same file."""

from __future__ import annotations

import pytest
from serve_harness import ServeProcess
from served_greedy import assert_served_greedy_equals_engine

from roles.scheduler.kernels.isa import path_for, paths_this_cpu_has
from tests.kquant_checkpoint import write_kquant_llama

PROMPTS = ["The quick brown fox", "def add(a, b):", "Numbers like 12345"]


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    return str(write_kquant_llama(tmp_path_factory.mktemp("mixed") / "mixed.gguf"))


@pytest.fixture(scope="module")
def server(mixed, tmp_path_factory):
    config = {"model": {"path": mixed}, "memory": {"kv_cache_tokens": 2048}}
    with ServeProcess(tmp_path_factory.mktemp("serve"), config) as running:
        yield running


def test_served_greedy_completions_equal_the_in_process_engine(mixed, server):
    assert_served_greedy_equals_engine(server, mixed, PROMPTS)


def test_roles_shows_how_each_tensor_type_runs_and_the_scheduler_logs_it(server):
    import httpx

    processes = httpx.get(server.url + "/roles", timeout=30).json()["processes"]
    [scheduler] = [p for p in processes if p["role"] == "scheduler"]
    rows = {row["type"]: row for row in scheduler["facts"]["weights"]}
    assert rows["Q4_K"]["runs_as"] == "Q4_K blocks on the CPU kernels"
    assert rows["Q6_K"]["tensors"] == 3
    assert rows["F32"]["runs_as"] == "float32"
    [kernels] = scheduler["facts"]["kernels"]
    assert kernels["path"] == path_for("auto") and kernels["cpu_has"] == ", ".join(paths_this_cpu_has())
    assert "weights (exec.weight_dtype auto): BF16 x1 as BF16 blocks on the CPU kernels;" in server.output
    assert "; Q6_K x3 as Q6_K blocks on the CPU kernels;" in server.output
