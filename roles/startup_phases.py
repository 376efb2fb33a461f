"""Where a role process's start-up goes, phase by phase, from the moment the process was created to READY:
logged at debug level (`serve --log-level debug`) when the process reports READY, so "ready in N s" can be
taken apart (interpreter and unpickling, publishing the config, imports, each role's own build steps)."""

from __future__ import annotations

import logging
import os
import time

log = logging.getLogger("roleserve.startup")


def process_age_s() -> float | None:
    """Seconds since this process was created (Linux: /proc/self/stat against the boot clock), or None."""
    try:
        with open("/proc/self/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        started = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22 of the whole line: starttime
        return time.clock_gettime(time.CLOCK_BOOTTIME) - started
    except (OSError, ValueError, IndexError, AttributeError):
        return None


class StartupPhases:
    """Marks the end of each phase; `report` logs them with the process's age at READY."""

    def __init__(self) -> None:
        self.begin()

    def begin(self) -> None:
        """Count from this process's creation again: in a process forked from one that made this object (the
        preloaded parent), the phases so far were that process's."""
        age = process_age_s()
        now = time.monotonic()
        self._origin = now - age if age is not None else None
        self._last = now
        self._phases: list[tuple[str, float]] = []
        if age is not None:
            self._phases.append(("process start to role code", age))

    def mark(self, phase: str) -> None:
        """The phase named `phase` ends now (it began where the previous one ended)."""
        now = time.monotonic()
        self._phases.append((phase, now - self._last))
        self._last = now

    @property
    def phases(self) -> list[tuple[str, float]]:
        return list(self._phases)

    def report(self, who: str) -> None:
        self.mark("the rest")
        total = self._last - self._origin if self._origin is not None else sum(s for _, s in self._phases)
        parts = ", ".join(f"{name} {seconds:.3f} s" for name, seconds in self._phases if seconds >= 0.0005)
        log.debug("%s start-up: READY %.3f s after the process started: %s", who, total, parts)
