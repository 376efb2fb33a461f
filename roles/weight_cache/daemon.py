"""The weight_cache_daemon role: the shared-weights daemon for whole models; load each identity once.

Runs as a launcher child (dies with the server) or, with weight_cache.persist, detached in the
well-known run dir (see persistent.py), kept alive across `serve` restarts.
"""

from __future__ import annotations

import os

from roles.child_process import ChildLink
from roles.shared_weights.daemon import SharedWeightsDaemon, bind_router, run
from roles.shared_weights.store import WeightStore


def main(link: ChildLink) -> None:
    """Launcher child: serves the server's private runtime dir, dies with the server."""
    address = link.endpoints.weight_cache
    prefix = f"roleserve-wc-{os.getpid()}-"
    daemon = SharedWeightsDaemon(bind_router(link.zmq_context, address), WeightStore(prefix))
    link.send_ready()
    run(daemon, link)
