"""Which role processes one server runs, from the launcher's view of the resolved config."""

from __future__ import annotations

import dataclasses

from roles.child_process import ChildSpec
from roles.endpoints import Endpoints
from runtime_context import get_encoder, get_parallel, get_tokenizer, get_weight_cache

ENTRIES = {
    "scheduler": "roles.scheduler.process:main",
    "dp_controller": "roles.dp_controller:main",
    "tokenizer": "roles.tokenizer.process:main",
    "encoder": "roles.encoder.process:main",
    "weight_cache_daemon": "roles.weight_cache.daemon:main",
}


def num_encoders() -> int:
    encoder = get_encoder()
    return encoder.workers if encoder.enabled else 0


def child_specs() -> list[ChildSpec]:
    """Back ends first: schedulers load the model while the fronts start."""
    dp_size = get_parallel().dp_size
    cache = get_weight_cache()
    specs = []
    if cache.enabled and not cache.persist:  # a persistent daemon is not a child: see ensure_daemon
        specs.append(ChildSpec("weight_cache_daemon", 0, ENTRIES["weight_cache_daemon"]))
    specs += [ChildSpec("scheduler", i, ENTRIES["scheduler"]) for i in range(dp_size)]
    if dp_size > 1:
        specs.append(ChildSpec("dp_controller", 0, ENTRIES["dp_controller"]))
    specs += [ChildSpec("encoder", i, ENTRIES["encoder"]) for i in range(num_encoders())]
    specs += [ChildSpec("tokenizer", i, ENTRIES["tokenizer"]) for i in range(get_tokenizer().workers)]
    return specs


def endpoints_for(runtime_dir: str, persistent_cache: str | None = None) -> Endpoints:
    endpoints = Endpoints(
        runtime_dir,
        num_tokenizers=get_tokenizer().workers,
        dp_size=get_parallel().dp_size,
        num_encoders=num_encoders(),
    )
    if not get_weight_cache().enabled:
        return endpoints
    address = persistent_cache or endpoints.private_weight_cache
    return dataclasses.replace(endpoints, weight_cache=address)
