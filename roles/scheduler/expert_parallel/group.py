"""The expert-parallel group of one server: its scheduler ranks, joined by torch.distributed over gloo.

Ranks find each other at a meeting point (meeting_point.py): on one machine a FileStore in the server's
private runtime dir and loopback TCP; across a Ray cluster the launcher's TCPStore and the nodes' network.
Every collective is bounded by `parallel.ep_timeout_s`; a rank that waits longer (or whose peer went away)
raises RankMissing naming the ranks that did not arrive, read from the progress board.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.distributed as dist

from roles.scheduler.expert_parallel.progress_board import wait_until

# Ranks load the same model side by side; waiting longer than this for the slowest means it is stuck.
_LOAD_WAIT_LIMIT_S = 1800.0
# A rank whose pulse (progress_board.py, every 0.2 s) has not beaten for this long is stopped or dead.
_SILENT_AFTER_S = 1.0


class RankMissing(RuntimeError):
    """A collective could not complete: a rank died, hung, or stopped."""


@dataclass(frozen=True)
class Tick:
    """What the ranks said at the start of one loop turn, combined."""

    any_work: bool  # some rank has requests: every rank runs one pass (an idle one with an empty batch)
    any_stopping: bool  # some rank was told to shut down: all stop together
    agreed_commands: int  # the highest command number every rank has received: up to it, commands run now


class ExpertParallelGroup:
    def __init__(self, rank: int, size: int, meeting, timeout_s: float):
        """meeting: an OnOneMachine or AcrossTheCluster (roles/scheduler/expert_parallel/meeting_point.py)."""
        self.rank, self.size, self.timeout_s = rank, size, timeout_s
        self.meeting = meeting
        self.board = meeting.board(size, rank)
        self.board.start_incarnation()  # a restarted rank's process is its next incarnation
        self.board.start_pulse()
        self.generation = 0

    def join(self, on_wait: Callable[[], None] | None = None) -> None:
        """Once this rank's model is loaded: wait for every rank to be loaded too, then form the gloo group
        of this generation (a restarted rank joins the survivors, who wait for it in ``regroup``)."""
        self.board.mark_ready()
        self._form(lambda: True, _LOAD_WAIT_LIMIT_S, on_wait)

    def regroup(self, on_wait: Callable[[], None] | None = None, limit_s: float = _LOAD_WAIT_LIMIT_S) -> None:
        """After a peer died: leave the broken group, wait (bounded, ``on_wait`` heartbeats or gives up) for
        its replacement to be loaded, and form the next generation with it."""
        self.leave()
        previous = self.generation
        self._form(lambda: self.board.generation() > previous, limit_s, on_wait)

    def _form(self, newer: Callable[[], bool], limit_s: float, on_wait) -> None:
        try:
            wait_until(
                lambda: newer() and not self.board.not_ready(),
                limit_s,
                lambda: f"rank(s) {self.board.not_ready()} did not come back or finish loading",
                on_wait,
            )
        except TimeoutError as error:
            raise RankMissing(f"expert-parallel rank {self.rank}: {error}") from None
        self.generation = self.board.generation()
        self.board.reset_entered()
        os.environ["GLOO_SOCKET_IFNAME"] = self.meeting.socket_interface
        timeout = datetime.timedelta(seconds=self.timeout_s)
        store = self.meeting.store(self.generation, self.size)
        self._run(
            "rendezvous",
            lambda: dist.init_process_group(
                "gloo", store=store, rank=self.rank, world_size=self.size, timeout=timeout
            ),
        )

    def leave(self) -> None:
        if dist.is_initialized():
            dist.destroy_process_group()

    # ---- bounded collectives --------------------------------------------------------------------------
    def _run(self, what: str, collective: Callable[[], object]):
        number = self.board.enter()
        try:
            return collective()
        except (RuntimeError, ValueError) as error:  # gloo's timeouts and closed connections
            behind = self.board.behind(number)
            silent = [] if behind else self.board.silent(_SILENT_AFTER_S)
            if behind:
                who = f"rank(s) {behind} did not arrive"
            elif silent:
                who = f"rank(s) {silent} went silent during it"
            else:
                who = f"a rank left during it ({str(error).splitlines()[0][:200]})"
            raise RankMissing(
                f"expert-parallel rank {self.rank} stopped at collective {number} ({what}), bounded by "
                f"parallel.ep_timeout_s={self.timeout_s:g}s: {who}"
            ) from None

    def tick(self, has_work: bool, stopping: bool, commands_received: int) -> Tick:
        self.board.publish()  # how far this rank got, for a peer that times out to name who is behind
        mine = torch.tensor([int(has_work), int(stopping), commands_received], dtype=torch.int64)
        said = [torch.empty_like(mine) for _ in range(self.size)]
        self._run("tick", lambda: dist.all_gather(said, mine))
        table = torch.stack(said)
        return Tick(bool(table[:, 0].any()), bool(table[:, 1].any()), int(table[:, 2].min()))

    def exchange_counts(self, counts: torch.Tensor) -> torch.Tensor:
        """counts [size * k]: k numbers for each rank -> [size * k]: the k numbers each rank sent this one."""
        received = torch.empty_like(counts)
        self._run("expert counts", lambda: dist.all_to_all_single(received, counts))
        return received

    def exchange_rows(
        self, rows: torch.Tensor, send_splits: list[int], receive_splits: list[int]
    ) -> torch.Tensor:
        """rows[sum(send_splits), ...], send_splits[r] of them to rank r -> the rows every rank sent here."""
        received = rows.new_empty((sum(receive_splits), *rows.shape[1:]))
        self._run(
            "expert rows",
            lambda: dist.all_to_all_single(received, rows.contiguous(), receive_splits, send_splits),
        )
        return received

    def max(self, value: int) -> int:
        """The largest of the ranks' values."""
        tensor = torch.tensor([value], dtype=torch.int64)
        self._run("max", lambda: dist.all_reduce(tensor, op=dist.ReduceOp.MAX))
        return int(tensor)

    def sum(self, tensor: torch.Tensor) -> torch.Tensor:
        """Elementwise sum over the ranks (a copy)."""
        total = tensor.clone()
        self._run("sum", lambda: dist.all_reduce(total))
        return total

    def gather_objects(self, value: object) -> list[object] | None:
        """Every rank's value on rank 0 (in rank order); None on the others."""
        gathered = [None] * self.size if self.rank == 0 else None
        self._run("gather", lambda: dist.gather_object(value, gathered, dst=0))
        return gathered
