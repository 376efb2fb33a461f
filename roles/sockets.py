"""The sockets a role connects to its peers with, made one way everywhere."""

from __future__ import annotations

import zmq


def connect_push(context: zmq.Context, address: str) -> zmq.Socket:
    """A PUSH socket connected to ``address`` that never holds the process open at exit (LINGER 0)."""
    push = context.socket(zmq.PUSH)
    push.setsockopt(zmq.LINGER, 0)
    push.connect(address)
    return push
