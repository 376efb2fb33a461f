"""Where the expert-parallel ranks of one server meet: the rendezvous store of each generation, the progress
board, and the network interface gloo runs on.

- OnOneMachine (parallel.backend local): a FileStore and a shared-memory board in the private runtime dir;
  gloo over loopback.
- AcrossTheCluster (parallel.backend ray): the launcher's TCPStore holds the board and one key prefix per
  generation; gloo runs on the interface of the address this rank reaches the launcher from.
"""

from __future__ import annotations

import datetime
import socket

import psutil
import torch.distributed as dist

from roles.scheduler.expert_parallel.progress_board import ProgressBoard
from roles.scheduler.expert_parallel.store_board import StoreProgressBoard


class OnOneMachine:
    socket_interface = "lo"

    def __init__(self, rendezvous_path: str, progress_path: str):
        self.rendezvous_path, self.progress_path = rendezvous_path, progress_path

    def board(self, size: int, rank: int) -> ProgressBoard:
        return ProgressBoard(self.progress_path, size, rank)

    def store(self, generation: int, size: int) -> dist.Store:
        return dist.FileStore(f"{self.rendezvous_path}.{generation}", size)


def address_towards(host: str, port: int) -> str:
    """This machine's address on the route to host:port (a UDP socket's connect sends nothing)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_DGRAM) as probe:
        probe.connect((host, port))
        return probe.getsockname()[0]


def interface_of(address: str) -> str:
    for name, addresses in psutil.net_if_addrs().items():
        if any(entry.address == address for entry in addresses):
            return name
    raise RuntimeError(f"no network interface of this machine has the address {address}")


class AcrossTheCluster:
    def __init__(self, store_host: str, store_port: int, timeout_s: float):
        self._store = dist.TCPStore(
            store_host, store_port, None, False, timeout=datetime.timedelta(seconds=timeout_s)
        )
        self.socket_interface = interface_of(address_towards(store_host, store_port))

    def board(self, size: int, rank: int) -> StoreProgressBoard:
        return StoreProgressBoard(self._store, size, rank)

    def store(self, generation: int, size: int) -> dist.Store:
        return dist.PrefixStore(f"generation-{generation}", self._store)
