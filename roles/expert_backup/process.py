"""The expert_backup role: every expert of the served MoE model, converted once into one owner-only
shared-memory segment, served like the weight cache (same store and daemon loop, experts only).

It starts loading at once, for exec.weight_dtype; a rank's query waits for the load (or another format's,
when the rank runs another one). Experts that need more than expert_backup.max_memory_mb are refused with
the size they need, in the answer to every query.
"""

from __future__ import annotations

import logging
import os

from roles.child_process import ChildLink
from roles.model_files.model_path import resolve_model_path
from roles.shared_weights.daemon import SharedWeightsDaemon, bind_router, run
from roles.shared_weights.identity import identity_of
from roles.shared_weights.store import WeightStore
from runtime_context import get_exec, get_expert_backup, get_model

log = logging.getLogger("roleserve.expert_backup")


def is_expert_tensor(name: str) -> bool:
    """The routed experts' tensors (``layers.L.moe.experts.E.…``), not the router nor a shared expert."""
    return ".moe.experts." in name


def main(link: ChildLink) -> None:
    settings = get_expert_backup()
    store = WeightStore(
        f"roleserve-eb-{os.getpid()}-",
        select=is_expert_tensor,
        max_bytes=settings.max_memory_mb * 2**20,
        owner=f"expert_backup (expert_backup.max_memory_mb={settings.max_memory_mb})",
    )
    daemon = SharedWeightsDaemon(bind_router(link.zmq_context, link.endpoints.expert_backup), store)
    # Loading starts now, in the store's worker thread; a rank's query waits for it (or gets its error).
    identity = identity_of(str(resolve_model_path(get_model().path)), get_exec().weight_dtype)
    store.start_load(identity, daemon.finished.put)
    link.send_ready()
    run(daemon, link)
