"""The dp_controller role: dispatch requests to scheduler replicas, route aborts to the owning replica.

round_robin cycles through replicas; shortest_queue picks the replica with the fewest requests it owns
(dispatched, not aborted, and not yet reported finished or refused in a replica's LoadReport), which is
exact without waiting for load reports. Each replica admits on its own queue and answers a request it
cannot hold with Overloaded straight to the tokenizer.
"""

from __future__ import annotations

import itertools
import logging

import zmq

from roles.child_process import ChildLink
from roles.protocol import (
    Abort,
    ExpertCommand,
    FrameCounter,
    Generate,
    LoadReport,
    encode,
    request_decoder,
    result_decoder,
)
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

    def forget(self, request_id: str) -> None:
        replica = self.owner.pop(request_id, None)
        if replica is not None:
            self.num_owned[replica] -= 1


def main(link: ChildLink) -> None:
    endpoints, context = link.endpoints, link.zmq_context
    dispatcher = Dispatcher(endpoints.dp_size, get_parallel().load_balance)
    incoming = context.socket(zmq.PULL)
    incoming.bind(endpoints.dp_requests)
    loads = context.socket(zmq.PULL)
    loads.bind(endpoints.dp_load)
    replicas = []
    for index in range(endpoints.dp_size):
        push = context.socket(zmq.PUSH)
        push.setsockopt(zmq.LINGER, 0)
        push.connect(endpoints.scheduler_requests(index))
        replicas.append(push)
    poller = zmq.Poller()
    for socket in (incoming, loads, link.control):
        poller.register(socket, zmq.POLLIN)
    frames = FrameCounter()
    link.send_ready()
    while link.shutdown_reason is None:
        events = dict(poller.poll(100))
        if link.control in events:
            link.poll_control()
        if loads in events:
            while loads.poll(0):
                report = frames.decode(result_decoder, loads.recv())
                if isinstance(report, LoadReport):
                    for request_id in report.finished:
                        dispatcher.forget(request_id)
        if incoming in events:
            while incoming.poll(0):
                frame = incoming.recv()
                message = frames.decode(request_decoder, frame)
                if isinstance(message, Generate):
                    replicas[dispatcher.assign(message.request_id)].send(frame)
                elif isinstance(message, ExpertCommand):  # every replica records its own passes
                    for replica in replicas:
                        replica.send(frame)
                elif isinstance(message, Abort):
                    replica = dispatcher.owner_of(message.request_id)
                    if replica is not None:
                        dispatcher.forget(message.request_id)  # it leaves the replica's queue now
                        replicas[replica].send(encode(message))
        link.heartbeat()
