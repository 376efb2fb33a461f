"""What the launcher knows of each ready child's life: when it was last heard, and whether its steps advance.

Three verdicts, from the launcher settings:
- late: silent past launcher.late_after_s. /health answers 503 naming it and new requests are refused until
  it is heard again (a late role is one requests would wait on in vain).
- hung: silent past launcher.heartbeat_timeout_s. A role whose heartbeat comes from a thread (the scheduler and
  the encoder, roles/heartbeat.py) is silent only when it does not run at all: stopped, or wedged in native code.
- stuck: heard, holding requests, but no step completed for launcher.stall_timeout_s: alive and not
  progressing. Busy is the opposite: steps advance, however long each takes.
Hung and stuck children are handled as dead ones.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from roles.protocol import Heartbeat


@dataclass
class _Progress:
    num_steps: int
    num_unfinished: int
    since: float  # monotonic time num_steps last changed (or the child started holding requests)


class Liveness:
    def __init__(
        self, late_after_s: float, heartbeat_timeout_s: float, stall_timeout_s: float, clock=time.monotonic
    ):
        self.clock = clock
        self.late_after_s = late_after_s
        self.heartbeat_timeout_s = heartbeat_timeout_s
        self.stall_timeout_s = stall_timeout_s
        self.last_heard: dict[str, float] = {}  # child name -> monotonic time of its latest control message
        self.progress: dict[str, _Progress] = {}  # child name -> its latest reported steps (roles with steps)

    def heard(self, name: str, message=None) -> None:
        now = self.clock()
        self.last_heard[name] = now
        if not isinstance(message, Heartbeat) or message.num_steps is None:
            return
        was = self.progress.get(name)
        advanced = was is None or message.num_steps != was.num_steps or was.num_unfinished == 0
        since = now if advanced else was.since
        self.progress[name] = _Progress(message.num_steps, message.num_unfinished, since)

    def forget(self, name: str) -> None:
        self.last_heard.pop(name, None)
        self.progress.pop(name, None)

    def silent_for(self, name: str) -> float:
        now = self.clock()
        return now - self.last_heard.get(name, now)

    def is_late(self, name: str) -> bool:
        return self.silent_for(name) > self.late_after_s

    def hung(self, names) -> list[tuple[str, str]]:
        """(name, why) of the children among ``names`` that are hung or stuck."""
        found = []
        now = self.clock()
        for name in names:
            silent_s = self.silent_for(name)
            if silent_s > self.heartbeat_timeout_s:
                found.append(
                    (
                        name,
                        f"sent no heartbeat for {silent_s:.1f} s (launcher.heartbeat_timeout_s = "
                        f"{self.heartbeat_timeout_s:g}): hung or stopped",
                    )
                )
                continue
            progress = self.progress.get(name)
            if progress is None or progress.num_unfinished == 0:
                continue
            stalled_s = now - progress.since
            if stalled_s > self.stall_timeout_s:
                found.append(
                    (
                        name,
                        f"holds {progress.num_unfinished} request(s) but completed no step for {stalled_s:.1f} s "
                        f"(launcher.stall_timeout_s = {self.stall_timeout_s:g}): stuck",
                    )
                )
        return found
