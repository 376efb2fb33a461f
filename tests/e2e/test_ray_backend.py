"""parallel.backend ray on a real two-node Ray cluster on this machine (two raylets on loopback, Ray's own
cluster utilities): two scheduler replicas spread over both nodes serve /v1/completions exactly as a local
replica does; a SIGKILLed actor is reported with its role, node and pid and restarted under on-failure; and
after `serve` stops, no actor, placement group or actor process is left in the cluster."""

from __future__ import annotations

import os
import re
import signal

import openai
import psutil
import pytest
from serve_harness import ServeProcess
from server_probes import wait_until

from conftest import tiny_config

LOOPBACK = "127.0.0.1"

from launcher.ray_loopback import keep_ray_on_loopback  # noqa: E402

keep_ray_on_loopback(LOOPBACK)  # this test's own driver, too, sees the cluster on loopback
ray = pytest.importorskip("ray")
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
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0, timeout=120)
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


def test_replicas_on_two_nodes_serve_survive_an_actor_kill_and_leave_nothing(tiny_model, tmp_path, two_nodes):
    with ServeProcess(tmp_path / "local", tiny_config(tiny_model)) as local:
        expected = greedy(local)
    config = tiny_config(
        tiny_model,
        parallel={
            "backend": "ray",
            "ray_address": two_nodes.address,
            "ray_placement": "spread",
            "dp_size": 2,
            "bind_host": LOOPBACK,
        },
        launcher={"restart_policy": "on-failure", "max_restarts": 1},
        observability={"log_level": "info"},
    )
    with ServeProcess(tmp_path / "ray", config, ready_timeout_s=240) as server:
        placed = actors_of(server)
        assert set(placed) == {"scheduler[0]", "scheduler[1]"}
        assert placed["scheduler[0]"][0] != placed["scheduler[1]"][0], placed  # spread: one per node
        assert greedy(server) == expected  # round robin: both replicas answered
        node, killed = placed["scheduler[1]"]
        os.kill(killed, signal.SIGKILL)
        wait_until(
            lambda: "restarting it (1/1)" in server.output, "the restart notice", server, timeout_s=120
        )
        assert re.search(
            rf"scheduler\[1\] \(pid {killed}\) \(ray actor on node {re.escape(node)}", server.output
        )
        wait_until(
            lambda: (
                actors_of(server)["scheduler[1]"][1] != killed
                and server.output.count("scheduler[1] ready") >= 2
            ),
            "the new actor's READY",
            server,
            timeout_s=120,
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
