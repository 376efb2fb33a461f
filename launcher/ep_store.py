"""parallel.backend ray with parallel.ep_size > 1: the launcher hosts the TCPStore where the expert-parallel
ranks meet (each generation's rendezvous, the progress board). It lives as long as the server, so a restarted
rank finds the board of the ranks it rejoins. Like gloo itself, it is not authenticated: torch.distributed has
no way to; keep the cluster's network private."""

from __future__ import annotations

import datetime

import torch.distributed as dist


def host_ep_store(host: str, port: int) -> dist.TCPStore:
    return dist.TCPStore(
        host, port, None, True, timeout=datetime.timedelta(seconds=60), wait_for_workers=False
    )
