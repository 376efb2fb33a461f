"""parallel.bind_host on loopback means the scheduler actors can only reach this machine: the whole Ray cluster
runs on it. Ray is then told to take loopback as this machine's address; otherwise it replaces 127.0.0.1 in
parallel.ray_address with the address it detects for the machine, and finds no cluster there.

Ray reads the switch when it is imported: call this before the first `import ray` of the process.
"""

from __future__ import annotations

import ipaddress
import os

# Ray's own switch for single-machine clusters (its name comes from the platforms where it is the default).
_SINGLE_MACHINE = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def keep_ray_on_loopback(bind_host: str) -> None:
    if is_loopback(bind_host):
        os.environ.setdefault(_SINGLE_MACHINE, "0")
