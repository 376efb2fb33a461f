"""parallel.backend ray on a real two-node Ray cluster on this machine (two raylets on loopback, Ray's own
cluster utilities): two scheduler replicas spread over both nodes serve /v1/completions exactly as a local
replica does; a SIGKILLed actor is reported with its role, node and pid and restarted under on-failure; and
after `serve` stops, no actor, placement group or actor process is left in the cluster. An MoE on two
expert-parallel ranks, one per node, answers as one rank does, also after a rank was killed and rejoined."""

from __future__ import annotations

import os
import re
import signal

import psutil
import pytest
from serve_harness import ServeProcess
from server_probes import wait_until

from conftest import tiny_config
from tests.moe_checkpoint import write_tiny_mixtral

LOOPBACK = "127.0.0.1"

from launcher.ray_loopback import keep_ray_on_loopback  # noqa: E402

keep_ray_on_loopback(LOOPBACK)  # this test's own driver, too, sees the cluster on loopback
import ray  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402

PROMPTS = ["Hello", "The capital of", "1, 2, 3,", "Once upon"]


@pytest.fixture(scope="module")
def two_nodes():
    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 1, "node_ip_address": LOOPBACK, "include_dashboard": False},
    )
    cluster.add_node(num_cpus=1, node_ip_address=LOOPBACK)
    cluster.wait_for_nodes()
    try:
        yield cluster
    finally:
        cluster.shutdown()


def greedy(server: ServeProcess) -> list[str]:
    client = server.openai_client(timeout_s=120)
    return [
        client.completions.create(model="tiny", prompt=p, max_tokens=6, temperature=0).choices[0].text
        for p in PROMPTS
    ]


def actors_of(server: ServeProcess) -> dict[str, tuple[str, int]]:
    """scheduler name -> (node, pid) of its latest actor, from the launcher's log."""
    found = re.findall(
        r"(scheduler\[\d\]) runs as a ray actor on node (\S+) \(\S+\), pid (\d+)", server.output
    )
    return {name: (node, int(pid)) for name, node, pid in found}


def ray_config(model, address: str, **parallel) -> dict:
    return tiny_config(
        model,
        parallel={
            "backend": "ray",
            "ray_address": address,
            "ray_placement": "spread",
            "dp_size": 2,
            "bind_host": LOOPBACK,
            **parallel,
        },
        launcher={"restart_policy": "on-failure", "max_restarts": 1},
        observability={"log_level": "info"},
    )


def kill_and_see_it_rejoin(server: ServeProcess, name: str) -> tuple[str, int]:
    """SIGKILL the actor of `name`; wait until its replacement is READY. Returns the killed (node, pid)."""
    node, killed = actors_of(server)[name]
    os.kill(killed, signal.SIGKILL)
    wait_until(lambda: "restarting it (1/1)" in server.output, "the restart notice", server, timeout_s=120)
    wait_until(
        lambda: actors_of(server)[name][1] != killed and server.output.count(f"{name} ready") >= 2,
        "the new actor's READY",
        server,
        timeout_s=180,
    )
    return node, killed


def test_replicas_on_two_nodes_serve_survive_an_actor_kill_and_leave_nothing(tiny_model, tmp_path, two_nodes):
    with ServeProcess(tmp_path / "local", tiny_config(tiny_model)) as local:
        expected = greedy(local)
    config = ray_config(tiny_model, two_nodes.address)
    with ServeProcess(tmp_path / "ray", config, ready_timeout_s=240) as server:
        placed = actors_of(server)
        assert set(placed) == {"scheduler[0]", "scheduler[1]"}
        assert placed["scheduler[0]"][0] != placed["scheduler[1]"][0], placed  # spread: one per node
        assert greedy(server) == expected  # round robin: both replicas answered
        node, killed = kill_and_see_it_rejoin(server, "scheduler[1]")
        assert re.search(
            rf"scheduler\[1\] \(pid {killed}\) \(ray actor on node {re.escape(node)}", server.output
        )
        assert greedy(server) == expected
        pids = [pid for _, pid in actors_of(server).values()]
    assert server.wait_exit(60) == 0
    for pid in pids + [killed]:
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    ray.init(address=two_nodes.address, _node_ip_address=LOOPBACK, logging_level="ERROR")
    try:
        groups = ray.util.placement_group_table().values()
        assert all(group["state"] == "REMOVED" for group in groups), list(groups)
        actors = ray._private.state.actors().values()
        assert all(actor["State"] == "DEAD" for actor in actors), [a["State"] for a in actors]
    finally:
        ray.shutdown()


def test_expert_parallel_ranks_on_two_nodes_answer_as_one_rank_also_after_a_rank_rejoins(tmp_path, two_nodes):
    moe = write_tiny_mixtral(tmp_path / "mixtral")
    with ServeProcess(tmp_path / "one-rank", tiny_config(moe)) as one_rank:
        expected = greedy(one_rank)
    with ServeProcess(
        tmp_path / "ray", ray_config(moe, two_nodes.address, ep_size=2), ready_timeout_s=240
    ) as server:
        placed = actors_of(server)
        assert placed["scheduler[0]"][0] != placed["scheduler[1]"][0], placed
        assert greedy(server) == expected
        kill_and_see_it_rejoin(server, "scheduler[1]")
        assert greedy(server) == expected  # the survivor regrouped with the new rank 1
    assert server.wait_exit(60) == 0
