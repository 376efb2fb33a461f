"""Which role processes one server runs, from the launcher's view of the resolved config."""

from __future__ import annotations

import dataclasses

from launcher.port_check import free_tcp_ports
from launcher.role_list import (
    DP_CONTROLLER,
    ENCODER,
    EXPERT_BACKUP,
    SCHEDULER,
    TOKENIZER,
    WEIGHT_CACHE_DAEMON,
)
from roles.child_process import ChildSpec
from roles.curve import CurveKeys
from roles.endpoints import Endpoints, TcpRoutes
from roles.role_description import RoleDescription
from runtime_context import get_encoder, get_expert_backup, get_parallel, get_tokenizer, get_weight_cache


def _spec(role: RoleDescription, instance: int) -> ChildSpec:
    assert role.entry is not None, f"role {role.name} has no process entry"
    return ChildSpec(role.name, instance, role.entry, role.projection, role.serves_requests, role.preload)


def num_encoders() -> int:
    encoder = get_encoder()
    return encoder.workers if encoder.enabled else 0


def num_schedulers() -> int:
    """The data-parallel replicas, or the expert-parallel ranks (each rank is a replica: its own requests)."""
    parallel = get_parallel()
    return max(parallel.dp_size, parallel.ep_size)


def child_specs(endpoints: Endpoints) -> list[ChildSpec]:
    """Back ends first: schedulers load the model while the fronts start. Counts come from the endpoints,
    which were laid out for exactly these processes."""
    cache = get_weight_cache()
    specs = []
    if cache.enabled and not cache.persist:  # a persistent daemon is not a child: see ensure_daemon
        specs.append(_spec(WEIGHT_CACHE_DAEMON, 0))
    if get_expert_backup().enabled:  # one per machine; the ranks take their experts from it
        specs.append(_spec(EXPERT_BACKUP, 0))
    specs += [_spec(SCHEDULER, i) for i in range(endpoints.dp_size)]
    if endpoints.has_dp_controller:
        specs.append(_spec(DP_CONTROLLER, 0))
    specs += [_spec(ENCODER, i) for i in range(endpoints.num_encoders)]
    specs += [_spec(TOKENIZER, i) for i in range(endpoints.num_tokenizers)]
    return specs


def _expert_backup_address(runtime_dir: str) -> str | None:
    return f"ipc://{runtime_dir}/expert_backup" if get_expert_backup().enabled else None


def tcp_routes(num_tokenizers: int, num_replicas: int) -> TcpRoutes | None:
    """parallel.backend ray: a free port on parallel.bind_host for each socket an actor reaches, and the run's
    CURVE keys; None with backend local (every socket is ipc)."""
    parallel = get_parallel()
    if parallel.backend != "ray":
        return None
    has_ep_store = parallel.ep_size > 1
    ports = iter(free_tcp_ports(parallel.bind_host, 2 + num_tokenizers + num_replicas + has_ep_store))
    return TcpRoutes(
        host=parallel.bind_host,
        control=next(ports),
        dp_load=next(ports),
        tokenizer_results=tuple(next(ports) for _ in range(num_tokenizers)),
        scheduler_requests=tuple(next(ports) for _ in range(num_replicas)),
        keys=CurveKeys.generate(),
        ep_store=next(ports) if has_ep_store else None,
    )


def endpoints_for(runtime_dir: str, persistent_cache: str | None = None) -> Endpoints:
    num_tokenizers, num_replicas = get_tokenizer().workers, num_schedulers()
    endpoints = Endpoints(
        runtime_dir,
        num_tokenizers=num_tokenizers,
        dp_size=num_replicas,
        num_encoders=num_encoders(),
        ep_size=get_parallel().ep_size,
        expert_backup=_expert_backup_address(runtime_dir),
        tcp=tcp_routes(num_tokenizers, num_replicas),
    )
    if not get_weight_cache().enabled:
        return endpoints
    address = persistent_cache or endpoints.private_weight_cache
    return dataclasses.replace(endpoints, weight_cache=address)
