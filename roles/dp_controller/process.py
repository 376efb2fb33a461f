"""The dp_controller role: dispatch requests to scheduler replicas, route aborts to the owning replica.

round_robin cycles through replicas; shortest_queue picks the replica with the fewest requests it owns
(dispatched, not aborted, and not yet reported finished or refused in a replica's LoadReport), which is
exact without waiting for load reports. Each replica admits on its own queue and answers a request it
cannot hold with Overloaded straight to the tokenizer.

Expert commands (recording, rebalance) go to every replica, numbered, so expert-parallel ranks run them in
one order. A replica whose load report shows a new process (the launcher restarted it) lost the requests
it held: each of them gets an error event here, sent to its tokenizer, so no client waits forever.
"""

from __future__ import annotations

import itertools
import logging
import time

import msgspec
import zmq

from roles.child_process import ChildLink
from roles.protocol import (
    Abort,
    ExpertCommand,
    FrameCounter,
    Generate,
    LoadReport,
    TokenBatch,
    TokenEvent,
    encode,
    request_decoder,
    result_decoder,
)
from roles.sockets import bind, bind_push, connect_push
from runtime_context import get_parallel

log = logging.getLogger("roleserve.dp_controller")


class Dispatcher:
    """The routing policy and ownership table, free of sockets so it can be tested alone."""

    def __init__(self, num_replicas: int, policy: str):
        if policy not in ("round_robin", "shortest_queue"):
            raise ValueError(f"unknown load-balance policy {policy!r}; use round_robin or shortest_queue")
        self.num_replicas = num_replicas
        self.policy = policy
        self.owner: dict[str, int] = {}
        self.num_owned = [0] * num_replicas
        self._cycle = itertools.cycle(range(num_replicas))

    def assign(self, request_id: str) -> int:
        if self.policy == "round_robin":
            replica = next(self._cycle)
        else:
            replica = min(range(self.num_replicas), key=lambda i: (self.num_owned[i], i))
        self.owner[request_id] = replica
        self.num_owned[replica] += 1
        return replica

    def owner_of(self, request_id: str) -> int | None:
        return self.owner.get(request_id)

    def owned_by(self, replica: int) -> list[str]:
        return [request_id for request_id, owner in self.owner.items() if owner == replica]

    def forget(self, request_id: str) -> None:
        replica = self.owner.pop(request_id, None)
        if replica is not None:
            self.num_owned[replica] -= 1


class RestartWatch:
    """Which replica processes restarted, from the start time in their load reports; the requests sent to
    a replica before its new process started were lost with the old one."""

    def __init__(self):
        self.started_at: dict[int, float] = {}
        self.sent_at: dict[str, float] = {}  # request id -> when it was dispatched (unix s)
        self.reply_to: dict[str, int] = {}  # request id -> its tokenizer

    def dispatched(self, message: Generate) -> None:
        self.sent_at[message.request_id] = time.time()
        self.reply_to[message.request_id] = message.reply_to

    def forget(self, request_id: str) -> None:
        self.sent_at.pop(request_id, None)
        self.reply_to.pop(request_id, None)

    def lost(self, report: LoadReport, owned: list[str]) -> list[str]:
        """The owned requests a restarted replica lost; [] unless this report is from a new process."""
        known = self.started_at.get(report.instance)
        self.started_at[report.instance] = report.started_at
        if known is None or report.started_at == known:
            return []
        return [r for r in owned if r in self.reply_to and self.sent_at[r] < report.started_at]


def main(link: ChildLink) -> None:
    endpoints, context = link.endpoints, link.zmq_context
    dispatcher = Dispatcher(endpoints.dp_size, get_parallel().load_balance)
    watch = RestartWatch()
    keys = endpoints.curve
    incoming = bind(context.socket(zmq.PULL), endpoints.dp_requests)
    loads = bind(context.socket(zmq.PULL), endpoints.dp_load, keys)
    # Local replicas bind their request socket; actors connect to the one bound here for them.
    to_replica = connect_push if endpoints.schedulers_bind_requests else bind_push
    replicas = [to_replica(context, endpoints.scheduler_requests(i), keys) for i in range(endpoints.dp_size)]
    tokenizers = [
        connect_push(context, endpoints.tokenizer_results(i), keys) for i in range(endpoints.num_tokenizers)
    ]
    poller = zmq.Poller()
    for socket in (incoming, loads, link.control):
        poller.register(socket, zmq.POLLIN)
    frames = FrameCounter()
    commands = itertools.count(1)

    def forget(request_id: str) -> None:
        dispatcher.forget(request_id)
        watch.forget(request_id)

    link.send_ready()
    while link.shutdown_reason is None:
        events = dict(poller.poll(100))
        if link.control in events:
            link.poll_control()
        if loads in events:
            while loads.poll(0):
                report = frames.decode(result_decoder, loads.recv())
                if not isinstance(report, LoadReport):
                    continue
                for request_id in report.finished:
                    forget(request_id)
                for request_id in watch.lost(report, dispatcher.owned_by(report.instance)):
                    reason = (
                        f"scheduler[{report.instance}] restarted; the request was lost with its old process"
                    )
                    event = TokenEvent(request_id, -1, None, None, "lost", reason)
                    tokenizers[watch.reply_to[request_id]].send(encode(TokenBatch([event])))
                    forget(request_id)
        if incoming in events:
            while incoming.poll(0):
                frame = incoming.recv()
                message = frames.decode(request_decoder, frame)
                if isinstance(message, Generate):
                    replicas[dispatcher.assign(message.request_id)].send(frame)
                    if 0 <= message.reply_to < len(tokenizers):
                        watch.dispatched(message)
                elif isinstance(message, ExpertCommand):  # every replica acts, in one numbered order
                    numbered = encode(msgspec.structs.replace(message, sequence=next(commands)))
                    for replica in replicas:
                        replica.send(numbered)
                elif isinstance(message, Abort):
                    replica = dispatcher.owner_of(message.request_id)
                    if replica is not None:
                        forget(message.request_id)  # it leaves the replica's queue now
                        replicas[replica].send(encode(message))
        link.heartbeat()
