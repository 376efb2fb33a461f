"""Expert parallelism through the real server: `parallel.ep_size: 2` runs two scheduler ranks, each with
half of every layer's experts and its own requests, and answers greedy requests as `ep_size: 1` does; a
dump gathers both ranks' counts; a rank that dies or hangs stops the server, named."""

from __future__ import annotations

import json
import os
import re
import signal

import httpx
import pytest
from serve_harness import ServeProcess
from server_probes import DEADLINE_S, greedy_texts_at_once, pid_of

from conftest import tiny_config
from tests.moe_checkpoint import write_tiny_mixtral

PROMPTS = ["Hello there", "The weather today", "One two three four five", "A", "Tell me a story about"]
MAX_TOKENS = 8


@pytest.fixture(scope="module")
def mixtral(tmp_path_factory):
    return write_tiny_mixtral(tmp_path_factory.mktemp("tiny-mixtral"))


def ep_config(model, recordings, ep_size: int, **namespaces) -> dict:
    return tiny_config(
        model,
        parallel={"ep_size": ep_size, "ep_timeout_s": 3},
        exec={"moe": {"expert_distribution_recorder_mode": "per_pass", "recorder_dir": str(recordings)}},
        **namespaces,
    )


def complete_all(server: ServeProcess) -> list[str]:
    return greedy_texts_at_once(server, PROMPTS, MAX_TOKENS)


def admin(server: ServeProcess, action: str) -> dict:
    response = httpx.post(f"{server.url}/admin/expert_distribution/{action}", timeout=60)
    assert response.status_code == 200, response.text
    return response.json()


def test_two_ranks_answer_as_one_and_a_dump_gathers_both(mixtral, tmp_path):
    with ServeProcess(tmp_path / "one", ep_config(mixtral, tmp_path / "rec1", 1)) as server:
        alone = complete_all(server)
    with ServeProcess(tmp_path / "two", ep_config(mixtral, tmp_path / "rec2", 2)) as server:
        assert "expert-parallel rank 1 of 2" in server.output
        assert admin(server, "start")["replicas"] == [{"instance": 0}, {"instance": 1}]
        assert complete_all(server) == alone
        admin(server, "stop")
        replicas = admin(server, "dump")["replicas"]
    assert [r["instance"] for r in replicas] == [0, 1] and "path" not in replicas[1]
    with open(replicas[0]["path"], encoding="utf-8") as file:
        dump = json.load(file)
    assert os.path.basename(replicas[0]["path"]).startswith("expert_distribution-ep-")
    assert dump["ranks"] == 2 and dump["mode"] == "per_pass" and dump["pass_ids"]
    routed = [sum(layer) for layer in dump["logical_counts"]]
    assert (
        len(set(routed)) == 1 and routed[0] > 0 and routed[0] % 2 == 0
    )  # every layer routed each token twice
    per_pass = [sum(map(sum, record["logical_counts"])) for record in dump["per_pass"]]
    assert sum(per_pass) == sum(routed)


def stop_a_rank(mixtral, tmp_path, signum: signal.Signals, **launcher) -> tuple[int, str]:
    """Signal rank 1 of a two-rank server (restart_policy never) and wait for the server to exit 1;
    (rank 1's pid, the server's output)."""
    config = ep_config(mixtral, tmp_path / "rec", 2, launcher=launcher)
    with ServeProcess(tmp_path / "serve", config) as server:
        pid = pid_of(server, "scheduler", 1)
        os.kill(pid, signum)
        assert server.wait_exit(DEADLINE_S) == 1
        return pid, server.output


def test_a_rank_that_dies_stops_the_server_with_its_rank_named(mixtral, tmp_path):
    pid, output = stop_a_rank(mixtral, tmp_path, signal.SIGKILL)
    assert f"scheduler[1] (pid {pid}) was killed by signal SIGKILL" in output
    assert "it was expert-parallel rank 1 of 2" in output
    assert "shutting everything down (launcher.restart_policy: never)" in output


def test_a_rank_that_hangs_is_named_by_the_other_within_the_collective_timeout(mixtral, tmp_path):
    """Stopped, rank 1 neither dies nor answers: rank 0 names it after parallel.ep_timeout_s (3 s), by
    its count of collectives when it was stopped between two, by its silent pulse when it was stopped
    inside one, and waits for a replacement; the launcher finds rank 1 hung at its heartbeat timeout (6 s)
    and, under restart_policy never, stops everything."""
    pid, output = stop_a_rank(mixtral, tmp_path, signal.SIGSTOP, heartbeat_timeout_s=6)
    assert re.search(
        r"expert-parallel rank 0 stopped at collective \d+ \(\w[\w ]*\), bounded by "
        r"parallel\.ep_timeout_s=3s: rank\(s\) \[1\] (did not arrive|went silent during it)",
        output,
    ), output
    assert f"scheduler[1] (pid {pid}) sent no heartbeat for" in output
