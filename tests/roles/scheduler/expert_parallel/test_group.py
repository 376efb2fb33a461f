"""The expert-parallel group names the rank a collective waited for, as two real processes joined over
gloo on loopback: a rank stopped between collectives by its count, one stopped inside a collective (it
entered it like the others) by its silent pulse."""

from __future__ import annotations

import multiprocessing
import os
import signal

import pytest

_LIMIT_S = 120  # two processes import torch and time out once at 2 s; far longer means something hangs


def _rank_main(rank: int, runtime_dir: str, stop_inside: bool, said) -> None:
    from roles.scheduler.expert_parallel.group import ExpertParallelGroup, RankMissing
    from roles.scheduler.expert_parallel.meeting_point import OnOneMachine

    meeting = OnOneMachine(f"{runtime_dir}/ep.store", f"{runtime_dir}/ep.progress")
    group = ExpertParallelGroup(rank, 2, meeting, timeout_s=2)
    group.join()
    group.tick(False, False, 0)  # both arrive at the first
    if rank == 1:
        if stop_inside:
            group.board.enter()  # as far as its peers can see, it is inside the next collective
        os.kill(os.getpid(), signal.SIGSTOP)
        return
    try:
        group.tick(False, False, 0)
        said.put("completed")
    except RankMissing as error:
        said.put(str(error))


@pytest.mark.parametrize(
    "stop_inside, named",
    [(False, "rank(s) [1] did not arrive"), (True, "rank(s) [1] went silent during it")],
)
def test_rank_zero_names_the_stopped_rank(tmp_path, stop_inside, named):
    context = multiprocessing.get_context("spawn")
    said = context.Queue()
    ranks = [
        context.Process(target=_rank_main, args=(rank, str(tmp_path), stop_inside, said), daemon=True)
        for rank in (0, 1)
    ]
    for process in ranks:
        process.start()
    try:
        message = said.get(timeout=_LIMIT_S)
    finally:
        for process in ranks:
            process.kill()
            process.join(10)
    assert message == (
        "expert-parallel rank 0 stopped at collective 3 (tick), bounded by parallel.ep_timeout_s=2s: " + named
    )
