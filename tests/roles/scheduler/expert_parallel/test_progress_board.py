"""The progress board, in shared memory (ranks of one machine) and in the launcher's TCPStore (ranks across a
Ray cluster, over loopback here): incarnations, readiness and the generation every rank derives alike."""

from __future__ import annotations

import datetime

import pytest
import torch.distributed as dist

from launcher.ep_store import host_ep_store
from launcher.port_check import free_tcp_ports
from roles.scheduler.expert_parallel.progress_board import ProgressBoard, wait_until
from roles.scheduler.expert_parallel.store_board import StoreProgressBoard


@pytest.fixture(params=["shared memory", "tcp store"])
def new_board(request, tmp_path):
    """A function making rank r's board of a 2-rank group, as a new process of that rank would."""
    if request.param == "shared memory":
        path = str(tmp_path / "board")
        return lambda rank: ProgressBoard(path, 2, rank)
    [port] = free_tcp_ports("127.0.0.1", 1)
    host = host_ep_store("127.0.0.1", port)

    def board(rank: int) -> StoreProgressBoard:
        client = dist.TCPStore("127.0.0.1", port, None, False, timeout=datetime.timedelta(seconds=10))
        board.host = host  # the store lives as long as the boards
        return StoreProgressBoard(client, 2, rank)

    return board


def test_a_restarted_rank_is_a_new_incarnation_and_a_new_generation(new_board):
    rank0, rank1 = new_board(0), new_board(1)
    assert rank0.start_incarnation() == 1
    assert rank0.not_ready() == [0, 1]  # rank 1 has not even started
    rank1.start_incarnation()
    rank0.mark_ready()
    rank1.mark_ready()
    assert rank0.not_ready() == [] and rank0.generation() == 2
    again = new_board(1)  # rank 1's next process (sharing the pages, or reaching the same store)
    assert again.start_incarnation() == 2
    assert rank0.not_ready() == [1] and rank0.generation() == 3
    again.mark_ready()
    assert rank0.not_ready() == []


def test_shared_memory_names_the_ranks_behind_a_collective(tmp_path):
    path = str(tmp_path / "board")
    rank0, rank1 = ProgressBoard(path, 2, 0), ProgressBoard(path, 2, 1)
    rank0.enter(), rank1.enter()
    assert rank0.enter() == 2
    assert rank0.behind(2) == [1]
    rank1.reset_entered()
    assert rank0.behind(1) == [1]


def test_shared_memory_names_a_rank_whose_pulse_stopped(tmp_path):
    """Behaviour, not the clock: a pulsing rank keeps beating; one that beat once is named silent once its
    silence outlasts the window asked about (each wait bounded, however slow the machine)."""
    path = str(tmp_path / "board")
    rank0, rank1 = ProgressBoard(path, 2, 0), ProgressBoard(path, 2, 1)
    assert rank0.silent(3600.0) == [1]  # never beat
    rank1.start_pulse()
    first = rank0.pulse_of(1)
    assert first > 0 and rank0.silent(3600.0) == []
    wait_until(lambda: rank0.pulse_of(1) > first, 60, lambda: "the pulse did not beat again")
    stopped, watcher = (
        ProgressBoard(str(tmp_path / "other"), 2, 1),
        ProgressBoard(str(tmp_path / "other"), 2, 0),
    )
    stopped.beat()  # once, then never again
    once = watcher.pulse_of(1)
    wait_until(lambda: watcher.silent(0.3) == [1], 60, lambda: "the stopped rank was never named silent")
    assert watcher.pulse_of(1) == once


@pytest.mark.parametrize("new_board", ["tcp store"], indirect=True)
def test_the_store_names_the_ranks_behind_the_last_tick(new_board):
    rank0, rank1 = new_board(0), new_board(1)
    for board in (rank0, rank1):
        board.reset_entered()
        board.enter()
        board.publish()  # both reached the first tick
    assert rank0.behind(rank0.enter()) == []
    rank0.publish()  # rank 0 reached the next tick; rank 1 never did
    assert rank0.behind(rank0.enter()) == [1]
    rank1.enter()
    rank1.publish()
    assert rank0.behind(rank0.entered) == []
