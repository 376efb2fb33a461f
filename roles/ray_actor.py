"""A role process as a Ray actor (parallel.backend ray): what child_main does for a local child, for a
scheduler replica that Ray placed on some node of the cluster.

The constructor publishes the role before it builds anything, as a local child does; `run` is the role's
loop (it reports READY and heartbeats over the TCP control channel, CURVE-authenticated) and returns when the
launcher says stop. Ray owns the actor's life: it dies with the launcher's driver.
"""

from __future__ import annotations

import os

import ray

from roles.child_process import ChildSpec, publish_role, run_entry
from roles.endpoints import Endpoints


@ray.remote(max_restarts=0, max_task_retries=0)
class RoleActor:
    def __init__(self, spec: ChildSpec, wire: dict, endpoints: Endpoints):
        publish_role(spec, wire)
        self.spec = spec
        self.endpoints = endpoints

    def where(self) -> tuple[int, str]:
        """This actor's pid and node, as "<node id prefix> (<node address>)", for the launcher's reports."""
        node_id = ray.get_runtime_context().get_node_id()
        return os.getpid(), f"{node_id[:12]} ({ray.util.get_node_ip_address()})"

    def run(self) -> None:
        run_entry(self.spec, self.endpoints)
