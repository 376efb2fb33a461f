"""parallel.backend ray: the launcher joins a Ray cluster (or starts a private one), reserves one placement-group
bundle per scheduler replica, and runs each replica as an actor in its bundle.

An ActorProcess answers what the supervisor asks of a child process (alive, exit, kill, join), so deaths,
hangs, restarts and shutdown go through the same code as for local children. Closing releases everything
made in the cluster: every actor is killed and the placement group removed; a private cluster is stopped.
"""

from __future__ import annotations

import logging
import socket
import time

import ray
from ray.exceptions import GetTimeoutError, RayActorError
from ray.util.placement_group import placement_group, remove_placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

from roles.child_process import ChildSpec
from roles.endpoints import Endpoints
from roles.ray_actor import RoleActor

log = logging.getLogger("roleserve.launcher")

_STRATEGIES = {"pack": "PACK", "spread": "SPREAD"}


class PlacementFailed(ConnectionError):
    """The cluster answered but cannot hold the replicas."""


class ActorProcess:
    """One scheduler replica's actor, seen as a child process by the supervisor.

    Nothing here waits for the actor: Ray may take a while to place it (a bundle freed by a dead actor), and
    the supervisor must keep hearing the other children meanwhile. Its pid and node are known once the actor
    answers; a replica that never starts is found by launcher.startup_timeout_s like any child."""

    def __init__(self, spec: ChildSpec, actor):
        self.spec = spec
        self.actor = actor
        self.pid, self.node = 0, "?"
        self._ended: str | None = None  # how it ended, once it has
        self._exitcode: int | None = None
        self._where_ref = actor.where.remote()  # the actor runs its calls in order: where, then run
        self.run_ref = actor.run.remote()

    def _end(self, exitcode: int, how: str) -> None:
        if self._exitcode is None:
            self._exitcode, self._ended = exitcode, how

    @property
    def exitcode(self) -> int | None:
        """None while the actor runs its role; 0 when the role returned, 1 when the actor died or failed."""
        self._poll()
        return self._exitcode

    def _poll(self) -> None:
        if self._exitcode is not None:
            return
        if self._where_ref is not None and ray.wait([self._where_ref], timeout=0)[0]:
            where, self._where_ref = self._where_ref, None
            try:
                self.pid, self.node = ray.get(where)
                log.info("%s runs as a ray actor on node %s, pid %d", self.spec.name, self.node, self.pid)
            except RayActorError:
                pass  # it died before answering: run_ref says how, below
        done, _ = ray.wait([self.run_ref], timeout=0)
        if not done:
            return
        try:
            ray.get(done[0])
            self._end(0, "returned")
        except RayActorError as error:
            self._end(1, f"died: {_first_line(error)}")
        except Exception as error:  # the role's loop raised: its traceback is in the actor's log above
            self._end(1, f"failed: {_first_line(error)}")

    def is_alive(self) -> bool:
        return self.exitcode is None

    def exit_description(self) -> str:
        self._poll()
        return f"(ray actor on node {self.node}) {self._ended or 'is still running'}"

    def terminate(self) -> None:
        self.kill()

    def kill(self) -> None:
        if self.exitcode is None:
            ray.kill(self.actor, no_restart=True)

    def join(self, timeout_s: float | None = None) -> None:
        if self.exitcode is None:
            ray.wait([self.run_ref], timeout=timeout_s)


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0].rstrip(".") if text else type(error).__name__


def check_reachable(address: str, timeout_s: float = 5.0) -> None:
    """A host:port cluster address must answer a TCP connect: ray.init would otherwise retry for minutes.
    ConnectionError naming the setting when it does not. (local, auto and ray:// are Ray's to resolve.)"""
    if address in ("local", "auto") or "://" in address:
        return
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            return
    except (OSError, ValueError) as error:
        reason = getattr(error, "strerror", None) or str(error)
        raise ConnectionError(
            f"no Ray cluster answers at parallel.ray_address={address!r} ({reason}); start one "
            "(`ray start --head`) or use ray_address: local"
        ) from None


class RayPlacement:
    """The cluster, the placement group and the actors of one `serve`."""

    def __init__(
        self,
        address: str,
        bind_host: str,
        num_replicas: int,
        cpus_each: int,
        placement: str,
        timeout_s: float,
    ):
        check_reachable(address)
        ray.init(
            address=None if address == "local" else address,  # None: a private cluster, stopped on exit
            _node_ip_address=bind_host,
            include_dashboard=False,
            logging_level=logging.WARNING,
            configure_logging=True,
            log_to_driver=True,
        )
        bundles = [{"CPU": cpus_each} for _ in range(num_replicas)]
        self.group = placement_group(bundles, strategy=_STRATEGIES[placement])
        try:
            ray.get(self.group.ready(), timeout=timeout_s)
        except GetTimeoutError:
            available = ray.available_resources().get("CPU", 0)
            self.close()
            raise PlacementFailed(
                f"the Ray cluster did not grant {num_replicas} bundle(s) of {cpus_each} CPU within "
                f"launcher.startup_timeout_s={timeout_s:g}s (it has {available:g} CPU free): lower "
                f"exec.threads or parallel.dp_size, or add nodes"
            ) from None
        self.actors: list[ActorProcess] = []

    def start(self, spec: ChildSpec, wire: dict, endpoints: Endpoints) -> ActorProcess:
        strategy = PlacementGroupSchedulingStrategy(self.group, placement_group_bundle_index=spec.instance)
        cpus = self.group.bundle_specs[spec.instance]["CPU"]
        actor = RoleActor.options(
            scheduling_strategy=strategy, num_cpus=cpus, name=f"{spec.name}-{time.monotonic_ns()}"
        ).remote(spec, wire, endpoints.for_actor())
        process = ActorProcess(spec, actor)
        self.actors.append(process)
        return process

    def close(self) -> None:
        """Kill every actor made, release the placement group, leave the cluster (stopping a private one)."""
        for process in self.actors:
            try:
                ray.kill(process.actor, no_restart=True)
            except Exception:  # already gone
                pass
        try:
            remove_placement_group(self.group)
        except Exception:
            pass
        ray.shutdown()
