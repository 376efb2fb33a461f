"""Shared memory where expert-parallel ranks mark how far they got: loaded, and collectives entered.

One small file in the server's private runtime dir, mapped by every rank: rank r writes only its own row.
A rank that waits too long at a collective reads the others' rows to name the ranks that never arrived (a
dead or hung rank cannot say so itself), and ranks wait here for each other to finish loading the model
before they rendezvous, so a slow load is not taken for a missing rank.
"""

from __future__ import annotations

import time

import torch

_LOADED, _ENTERED = 0, 1  # the columns of a rank's row


class ProgressBoard:
    def __init__(self, path: str, num_ranks: int, rank: int):
        self.rank = rank
        # Created by whichever rank comes first, zero-filled; every rank maps the same pages.
        self._rows = torch.from_file(path, shared=True, size=num_ranks * 2, dtype=torch.int64).view(
            num_ranks, 2
        )

    def mark_loaded(self) -> None:
        self._rows[self.rank, _LOADED] = 1

    def not_loaded(self) -> list[int]:
        return [rank for rank, loaded in enumerate(self._rows[:, _LOADED].tolist()) if not loaded]

    def wait_until_loaded(self, limit_s: float, on_wait=None) -> None:
        """Until every rank marked itself loaded; TimeoutError naming the others after limit_s.
        ``on_wait`` is called while waiting (the caller's heartbeat)."""
        deadline = time.monotonic() + limit_s
        while missing := self.not_loaded():
            if time.monotonic() >= deadline:
                raise TimeoutError(f"rank(s) {missing} did not finish loading within {limit_s:g} s")
            if on_wait is not None:
                on_wait()
            time.sleep(0.05)

    def enter(self) -> int:
        """Count one more collective entered by this rank; returns its number."""
        entered = int(self._rows[self.rank, _ENTERED]) + 1
        self._rows[self.rank, _ENTERED] = entered
        return entered

    def behind(self, collective: int) -> list[int]:
        """The ranks that have not entered collective number ``collective``."""
        return [rank for rank, entered in enumerate(self._rows[:, _ENTERED].tolist()) if entered < collective]
