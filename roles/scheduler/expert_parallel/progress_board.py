"""Shared memory where expert-parallel ranks mark how far they got: which process of each rank is running
and loaded, and how many collectives it entered.

One small file in the server's private runtime dir, mapped by every rank: rank r writes only its own row.
- incarnation: how many processes of the rank have started (a restarted rank is the next one); their sum is
  the group's generation, so every rank derives the same rendezvous for the same set of processes;
- ready: the incarnation that finished loading its model; ranks rendezvous once every rank is ready;
- entered: collectives entered in this generation; a rank that waits too long at one reads the others'
  rows to name the ranks that never arrived (a dead or hung rank cannot say so itself);
- pulse: when the rank's pulse thread last wrote (CLOCK_MONOTONIC, shared by the machine's processes); a
  rank stopped or dead inside a collective has entered it like the others, and is named by its silence.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import torch

_INCARNATION, _READY, _ENTERED, _PULSE = 0, 1, 2, 3  # the columns of a rank's row
_COLUMNS = 4
_PULSE_EVERY_S = 0.2


def wait_until(until: Callable[[], bool], limit_s: float, what: Callable[[], str], on_wait=None) -> None:
    """Until ``until()``; TimeoutError saying ``what()`` after limit_s. ``on_wait`` runs while waiting (the
    caller's heartbeat; it may raise to give up)."""
    deadline = time.monotonic() + limit_s
    while not until():
        if time.monotonic() >= deadline:
            raise TimeoutError(f"{what()} within {limit_s:g} s")
        if on_wait is not None:
            on_wait()
        time.sleep(0.05)


def ranks_not_ready(rows: list[tuple[int, int]]) -> list[int]:
    """From each rank's (incarnation, ready incarnation): the ranks not started, or whose current process has
    not finished loading."""
    return [rank for rank, (started, ready) in enumerate(rows) if started == 0 or ready != started]


class ProgressBoard:
    def __init__(self, path: str, num_ranks: int, rank: int):
        self.rank = rank
        # Created by whichever rank comes first, zero-filled; every rank maps the same pages.
        self._rows = torch.from_file(path, shared=True, size=num_ranks * _COLUMNS, dtype=torch.int64).view(
            num_ranks, _COLUMNS
        )
        self._pulse: threading.Thread | None = None

    def start_incarnation(self) -> int:
        """This process is the rank's next incarnation (1 for the first)."""
        incarnation = int(self._rows[self.rank, _INCARNATION]) + 1
        self._rows[self.rank, _INCARNATION] = incarnation
        return incarnation

    def mark_ready(self) -> None:
        self._rows[self.rank, _READY] = self._rows[self.rank, _INCARNATION]

    def not_ready(self) -> list[int]:
        return ranks_not_ready([(row[_INCARNATION], row[_READY]) for row in self._rows.tolist()])

    def generation(self) -> int:
        return int(self._rows[:, _INCARNATION].sum())

    def publish(self) -> None:
        """Nothing to do: every count is in shared memory the moment it changes."""

    def reset_entered(self) -> None:
        self._rows[self.rank, _ENTERED] = 0

    def enter(self) -> int:
        """Count one more collective entered by this rank; returns its number."""
        entered = int(self._rows[self.rank, _ENTERED]) + 1
        self._rows[self.rank, _ENTERED] = entered
        return entered

    def behind(self, collective: int) -> list[int]:
        """The ranks that have not entered collective number ``collective``."""
        return [rank for rank, row in enumerate(self._rows.tolist()) if row[_ENTERED] < collective]

    def beat(self) -> None:
        self._rows[self.rank, _PULSE] = time.monotonic_ns()

    def start_pulse(self) -> None:
        """Beat every 0.2 s from a daemon thread for as long as this process runs: a stopped or dead
        process stops beating, a busy one does not (the thread needs only brief turns of the GIL)."""
        if self._pulse is None:
            self.beat()
            self._pulse = threading.Thread(target=self._beat_forever, name="ep-pulse", daemon=True)
            self._pulse.start()

    def _beat_forever(self) -> None:
        while True:
            time.sleep(_PULSE_EVERY_S)
            self.beat()

    def pulse_of(self, rank: int) -> int:
        """When ``rank`` last beat (CLOCK_MONOTONIC, ns; 0 if never)."""
        return int(self._rows[rank, _PULSE])

    def silent(self, for_s: float) -> list[int]:
        """The other ranks whose pulse has not beaten for ``for_s`` seconds (or ever)."""
        now = time.monotonic_ns()
        return [
            rank
            for rank, row in enumerate(self._rows.tolist())
            if rank != self.rank and now - row[_PULSE] > for_s * 1e9
        ]
