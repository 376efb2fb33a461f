"""Where a scheduler's model comes from: the weight_cache_daemon, the expert_backup, or the checkpoint.

- expert_backup enabled: the experts are mapped from the backup's shared memory, the rest is converted
  from the checkpoint (the weight cache is not asked); the mapping stays with the model, so a rebalance
  can take other experts from it.
- weight_cache enabled: the whole converted model is mapped from the daemon.
- otherwise (or when a daemon is unavailable and its on_unavailable says load_from_disk): None, and the
  engine loads the checkpoint itself.
"""

from __future__ import annotations

import logging

from roles.child_process import ChildLink
from runtime_context import get_expert_backup, get_weight_cache

log = logging.getLogger("roleserve.scheduler")


def shared_model_or_none(link: ChildLink, config, expert_shard_for=None):
    """The model mapped from the weight_cache_daemon, or None to load from disk (weight_cache.on_unavailable)."""
    cache = get_weight_cache()
    if not cache.enabled or link.endpoints.weight_cache is None:
        return None
    from roles.scheduler.loading.from_shared_memory import load_shared_model
    from roles.shared_weights.asking import WeightCacheUnavailable

    try:
        return load_shared_model(
            link.zmq_context,
            link.endpoints.weight_cache,
            config.model_path,
            config.weight_dtype,
            expert_shard_for,
        )
    except (WeightCacheUnavailable, OSError, ValueError) as error:
        if cache.on_unavailable == "fail":
            raise SystemExit(
                f"scheduler: weight cache unavailable and weight_cache.on_unavailable is fail: {error}"
            ) from None
        log.warning("weight cache unavailable (%s); loading %s from disk", error, config.model_path)
        return None


def expert_backup_weights(link: ChildLink, config):
    """Every expert's tensors mapped from the expert_backup, or None (no backup, or unavailable and
    expert_backup.on_unavailable is load_from_disk)."""
    address = link.endpoints.expert_backup
    if address is None:
        return None
    policy = get_expert_backup().on_unavailable
    if get_weight_cache().enabled:
        log.info(
            "experts from the expert_backup: the dense tensors come from the checkpoint, not the weight cache"
        )
    from roles.scheduler.loading.weight_mode import runnable_weight_dtype
    from roles.shared_weights.asking import WeightCacheUnavailable
    from roles.shared_weights.client import map_shared_weights

    try:
        return map_shared_weights(
            link.zmq_context, address, config.model_path, runnable_weight_dtype(config.weight_dtype)
        )
    except (WeightCacheUnavailable, OSError, ValueError) as error:
        if policy == "fail":
            raise SystemExit(
                f"scheduler: expert_backup unavailable and expert_backup.on_unavailable is fail: {error}"
            ) from None
        log.warning("expert_backup unavailable (%s); reading the experts from %s", error, config.model_path)
        return None


def model_from_sources(link: ChildLink, config, expert_shard_for=None):
    """(model, shape, the backup's mapped experts or None), or (None, None, None): the engine loads the
    checkpoint itself."""
    backup = expert_backup_weights(link, config)
    if backup is not None:
        from roles.scheduler.loading.from_expert_backup import load_backed_model

        model, shape = load_backed_model(config.model_path, config.weight_dtype, backup, expert_shard_for)
        return model, shape, backup
    shared = shared_model_or_none(link, config, expert_shard_for)
    return (*shared, None) if shared is not None else (None, None, None)
