"""Run a few expert-parallel engine ranks as real processes (spawned, gloo over loopback), for tests."""

from __future__ import annotations

import multiprocessing
import os
import traceback

_START_LIMIT_S = 300  # every rank loads a tiny checkpoint; far longer means something hangs


def small_engine_config(model_path: str, weight_dtype: str):
    """The engine settings of these tests, for each rank and for the one-engine reference alike."""
    from roles.scheduler.engine.settings import engine_config

    return engine_config(
        kv_cache_tokens=2048,
        model_path=model_path,
        weight_dtype=weight_dtype,
        page_size=8,
        chunked_prefill_size=16,
        max_running_requests=4,
        threads=1,
    )


def _rank_main(
    rank, size, runtime_dir, model_path, weight_dtype, prompts, max_tokens, recorder_mode, results
):
    try:
        import torch

        torch.set_num_threads(1)
        from roles.scheduler.kernels import native

        native.set_threads(1)
        from roles.protocol import SamplingFields
        from roles.scheduler.engine.core import Engine
        from roles.scheduler.expert_parallel.group import ExpertParallelGroup
        from roles.scheduler.expert_parallel.meeting_point import OnOneMachine
        from roles.scheduler.expert_parallel.shard import current_shard_for
        from roles.scheduler.expert_stats.recorder import make_recorder
        from roles.scheduler.expert_stats.reporter import BalancednessReporter

        meeting = OnOneMachine(f"{runtime_dir}/ep.store", f"{runtime_dir}/ep.progress")
        group = ExpertParallelGroup(rank, size, meeting, timeout_s=60)
        engine = Engine(
            small_engine_config(model_path, weight_dtype),
            expert_shard_for=current_shard_for(group, f"{runtime_dir}/ep.placement"),
        )
        group.join()
        placement = engine.expert_shard.placement
        reporter = BalancednessReporter(placement, None, exports=True) if recorder_mode != "off" else None
        engine.attach_expert_stats(make_recorder(recorder_mode, placement, 1000), reporter)
        if recorder_mode != "off":
            engine.expert_recorder.start()
        params = SamplingFields(max_tokens=max_tokens, temperature=0.0, ignore_eos=True)
        for index, prompt in enumerate(prompts):
            engine.add_request(f"r{index}", prompt, params)
        outputs = {f"r{index}": [] for index in range(len(prompts))}
        passes = 0
        while True:
            tick = group.tick(engine.has_unfinished(), False, 0)
            if not tick.any_work:
                break
            passes += 1
            for output in engine.step():
                if output.token_id is not None:
                    outputs[output.request_id].append(output.token_id)
        dump = engine.expert_recorder.dump() if recorder_mode != "off" else None
        snapshot = reporter.snapshot() if reporter is not None else None
        group.leave()
        results.put((rank, [outputs[f"r{i}"] for i in range(len(prompts))], passes, dump, snapshot))
    except BaseException:
        results.put((rank, traceback.format_exc(), 0, None, None))


def run_ranks(
    runtime_dir, model_path, prompts_by_rank, max_tokens, weight_dtype="exact", recorder_mode="off"
):
    """Each rank serves its own prompts; -> [(outputs per prompt, passes run, recorder dump, balancedness)]
    in rank order. A rank's exception is re-raised here with its traceback."""
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    size = len(prompts_by_rank)
    processes = [
        context.Process(
            target=_rank_main,
            args=(
                rank,
                size,
                os.fspath(runtime_dir),
                os.fspath(model_path),
                weight_dtype,
                prompts,
                max_tokens,
                recorder_mode,
                results,
            ),
        )
        for rank, prompts in enumerate(prompts_by_rank)
    ]
    for process in processes:
        process.start()
    try:
        gathered = dict(
            (item[0], item[1:]) for item in (results.get(timeout=_START_LIMIT_S) for _ in processes)
        )
    finally:
        for process in processes:
            process.join(10)
            if process.is_alive():
                process.kill()
    for rank in range(size):
        if isinstance(gathered[rank][0], str):
            raise AssertionError(f"rank {rank} failed:\n{gathered[rank][0]}")
    return [gathered[rank] for rank in range(size)]
