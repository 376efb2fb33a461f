"""Before anything is spawned: the HTTP port must be free. A server that finds it taken exits 2 naming the
setting and the port, instead of failing late in its fronts, or sharing the port with another server (its
fronts bind with SO_REUSEPORT, which would let a second server split the traffic)."""

from __future__ import annotations

import socket

from runtime_context import ConfigProblem, ResolvedConfig, get_http


def http_port_problem(resolved: ResolvedConfig) -> ConfigProblem | None:
    """After the launcher published its view; resolved: where http.port came from, for the message."""
    http = get_http()
    host, port = http.host, http.port
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        # SO_REUSEADDR only: a port left in TIME_WAIT is free, one that any socket listens on is not
        # (without SO_REUSEPORT the probe cannot join another server's group).
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as error:
            source = resolved.source("http.port")
            where = source.detail if source.kind == "file" else str(source)
            return ConfigProblem(
                where, "http.port", f"{host}:{port} is not free ({error.strerror}): another server holds it"
            )
    return None


def free_tcp_ports(host: str, count: int) -> list[int]:
    """`count` distinct ports free on `host` now, chosen by the kernel (parallel.backend ray's sockets).

    All are held until all are chosen, so they differ; the owners bind them moments later."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    probes = []
    try:
        for _ in range(count):
            probe = socket.socket(family, socket.SOCK_STREAM)
            probes.append(probe)
            probe.bind((host, 0))
        return [probe.getsockname()[1] for probe in probes]
    finally:
        for probe in probes:
            probe.close()
