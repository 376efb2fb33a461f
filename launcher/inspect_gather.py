"""Answer a live inspect query: ask every running child what it published, then reply with all entries."""

from __future__ import annotations

import itertools
import json
import time
from dataclasses import dataclass, field

from launcher.role_list import ROLES
from roles.protocol import InspectQuery, InspectReply, encode
from runtime_context import get_context
from runtime_context.inspect_report import live_entry


@dataclass
class _Gather:
    requester: bytes
    requester_query: int
    waiting_for: set[bytes]
    deadline: float
    entries: list[dict] = field(default_factory=list)


class InspectGatherer:
    def __init__(self, control_socket, timeout_s: float = 5.0):
        self.control = control_socket
        self.timeout_s = timeout_s
        self._ids = itertools.count(1)
        self._open: dict[int, _Gather] = {}

    def start(self, requester: bytes, query: InspectQuery, children: list[bytes]) -> None:
        gather_id = next(self._ids)
        gather = _Gather(requester, query.query_id, set(children), time.monotonic() + self.timeout_s)
        gather.entries.append(live_entry(get_context()))
        self._open[gather_id] = gather
        for child in children:
            self.control.send_multipart([child, encode(InspectQuery(gather_id))])
        self._finish_ready()

    def on_reply(self, sender: bytes, reply: InspectReply) -> None:
        gather = self._open.get(reply.query_id)
        if gather is None or sender not in gather.waiting_for:
            return
        gather.waiting_for.discard(sender)
        gather.entries.extend(json.loads(reply.entries_json))
        self._finish_ready()

    def _finish_ready(self) -> None:
        now = time.monotonic()
        for gather_id, gather in list(self._open.items()):
            if gather.waiting_for and now < gather.deadline:
                continue
            del self._open[gather_id]
            for missing in sorted(gather.waiting_for):  # a child that did not answer in time is named
                role, _, rest = missing.decode().partition("[")
                gather.entries.append(
                    {"role": role, "instance": int(rest.rstrip("]") or 0), "error": "no answer"}
                )
            gather.entries.sort(key=lambda e: (ROLES.order(e["role"]), e.get("instance") or 0))
            self.control.send_multipart(
                [gather.requester, encode(InspectReply(gather.requester_query, json.dumps(gather.entries)))]
            )

    def tick(self) -> None:
        self._finish_ready()
