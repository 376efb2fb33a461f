"""The scheduler role's process entry: load the model, build the engine and serve it (``server/``): the
one-replica server, or the lock-step server of an expert-parallel rank."""

from __future__ import annotations

import logging
import time

from roles.child_process import ChildLink
from roles.model_files.family_facts import family_facts
from roles.scheduler.engine.core import Engine
from roles.scheduler.engine.settings import engine_config_from_context
from roles.scheduler.expert_settings import (
    rebalance_settings_from_context,
    recorder_dir_from_context,
    recorder_from_context,
    reporter_from_context,
)
from roles.scheduler.kv_cache.kv_groups import kv_pool_facts
from roles.scheduler.loading.sources import model_from_sources
from roles.scheduler.loading.weight_report import report_kernel_path, report_weight_formats
from roles.scheduler.server.scheduler_server import SchedulerServer
from runtime_context import get_parallel

log = logging.getLogger("roleserve.scheduler")


def expert_parallel_group(link: ChildLink):
    """This rank's group when parallel.ep_size > 1 (its rank is this scheduler's instance), else None."""
    parallel = get_parallel()
    if parallel.ep_size == 1:
        return None
    from roles.scheduler.expert_parallel.group import ExpertParallelGroup
    from roles.scheduler.expert_parallel.meeting_point import AcrossTheCluster, OnOneMachine

    endpoints = link.endpoints
    if endpoints.tcp is not None:  # ray actors: the launcher hosts the store
        meeting = AcrossTheCluster(endpoints.tcp.host, endpoints.tcp.ep_store, parallel.ep_timeout_s)
    else:
        meeting = OnOneMachine(endpoints.ep_rendezvous, endpoints.ep_progress)
    return ExpertParallelGroup(link.spec.instance, parallel.ep_size, meeting, parallel.ep_timeout_s)


def main(link: ChildLink) -> None:
    config = engine_config_from_context()
    started = time.monotonic()
    group = expert_parallel_group(link)
    shard_for = None
    if group is not None:
        from roles.scheduler.expert_parallel.shard import current_shard_for

        shard_for = current_shard_for(group, link.endpoints.ep_placement)
        link.startup.mark("join the expert-parallel group")
    log.info(
        "loading %s (weights %s, %d threads%s)",
        config.model_path,
        config.weight_dtype,
        config.threads or 0,
        f", expert-parallel rank {group.rank} of {group.size}" if group else "",
    )
    model, shape, backup = model_from_sources(link, config, shard_for)
    link.startup.mark("load the model")
    engine = Engine(config, (model, shape) if model is not None else None, expert_shard_for=shard_for)
    link.startup.mark("build the engine")
    if engine.expert_shard is not None:
        placement = engine.expert_shard.placement
    elif engine.shape.num_experts:
        from roles.scheduler.moe.placement import ExpertPlacement

        placement = ExpertPlacement.contiguous(engine.shape.num_layers, engine.shape.num_experts)
    else:
        placement = None
    rebalances = backup is not None and engine.expert_shard is not None
    engine.attach_expert_stats(
        recorder_from_context(placement, counts_needed=rebalances), reporter_from_context(placement)
    )
    if rebalances:
        from roles.scheduler.expert_parallel.rebalance import ExpertRebalancer

        engine.expert_rebalancer = ExpertRebalancer(
            engine, backup.tensors, rebalance_settings_from_context(), link.endpoints.ep_placement
        )
    log.info(
        "model ready in %.1fs; KV cache %d tokens of %s",
        time.monotonic() - started,
        config.kv_cache_tokens,
        config.kv_cache_dtype,
    )
    if config.speculative_method == "draft_model":
        log.info(
            "draft model %s (exec.speculative_draft_model) beside it in weights %s, its own KV cache of %d tokens",
            config.speculative_draft_model,
            config.weight_dtype,
            config.kv_cache_tokens,
        )
    link.facts["family"] = family_facts(config.model_path) + kv_pool_facts(engine.kv_groups)
    link.facts["weights"] = report_weight_formats(config.model_path, config.weight_dtype)
    link.facts["kernels"] = report_kernel_path(config.kernel_isa, config.weight_dtype)
    link.startup.mark("read the model's facts")
    if group is None:
        server = SchedulerServer(link, engine, recorder_dir_from_context())
    else:
        from roles.scheduler.expert_parallel.group import RankMissing
        from roles.scheduler.server.lockstep_server import LockstepSchedulerServer

        try:
            group.join()
        except RankMissing as error:
            raise SystemExit(f"scheduler: {error}") from None
        server = LockstepSchedulerServer(link, engine, recorder_dir_from_context(), group)
    # Its first load before READY: by the time the launcher calls the server ready, the fronts have it queued
    # and /metrics carries this scheduler's series from the first scrape.
    server.report_load()
    link.send_ready()
    if group is None:
        server.run()
        return
    try:
        server.run()
    except RankMissing as error:
        raise SystemExit(f"scheduler: {error}") from None
