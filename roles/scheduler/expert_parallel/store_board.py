"""The progress board of ranks on several machines (parallel.backend ray): the same questions as the
shared-memory board, answered from the launcher's TCPStore, where rank r writes only its own keys.

A collective count sent to the store at every collective would cost a round trip each (dozens per pass), so
a rank publishes its count once per pass, at the tick: a rank that times out names the ranks that have not
reached the last tick it reached. A rank that stops later within a pass is not named by count; its peers
report that a rank left, and the launcher names it from the actor's death or silence.
"""

from __future__ import annotations

import torch.distributed as dist

from roles.scheduler.expert_parallel.progress_board import ranks_not_ready


class StoreProgressBoard:
    def __init__(self, store: dist.Store, num_ranks: int, rank: int):
        self.store, self.num_ranks, self.rank = store, num_ranks, rank
        self.incarnation = 0
        self.entered = 0  # this rank's collectives in this generation
        self.published = 0  # the count it last published

    def _read(self, name: str, rank: int) -> int:
        return int(self.store.add(f"{name}/{rank}", 0))  # reads without waiting (0 when never written)

    def _write(self, name: str, value: int) -> None:
        key = f"{name}/{self.rank}"
        self.store.set(key, str(value))
        self.store.get(
            key
        )  # a set is not answered: reading it back on this connection waits until it is stored

    def start_incarnation(self) -> int:
        self.incarnation = int(self.store.add(f"incarnation/{self.rank}", 1))
        return self.incarnation

    def mark_ready(self) -> None:
        self._write("ready", self.incarnation)

    def not_ready(self) -> list[int]:
        return ranks_not_ready(
            [(self._read("incarnation", r), self._read("ready", r)) for r in range(self.num_ranks)]
        )

    def generation(self) -> int:
        return sum(self._read("incarnation", r) for r in range(self.num_ranks))

    def reset_entered(self) -> None:
        self.entered = self.published = 0
        self._write("entered", 0)

    def enter(self) -> int:
        self.entered += 1
        return self.entered

    def publish(self) -> None:
        """Once per pass, before the tick: how many collectives this rank completed."""
        self.published = self.entered
        self._write("entered", self.entered)

    def start_pulse(self) -> None:
        """Nothing to do: machines' clocks cannot be compared, so silence is the launcher's to judge."""

    def silent(self, for_s: float) -> list[int]:
        """None named here (see start_pulse)."""
        return []

    def behind(self, collective: int) -> list[int]:
        """The ranks that have not published the count this rank last published (see the module's note)."""
        return [
            r for r in range(self.num_ranks) if r != self.rank and self._read("entered", r) < self.published
        ]
