"""The sockets a role connects to its peers with, made one way everywhere.

A tcp:// address (parallel.backend ray: scheduler actors on other machines) is CURVE-authenticated with the
run's keys (roles/curve.py): the binding side is the server, the connecting side the client.
"""

from __future__ import annotations

import zmq

from roles.curve import CurveKeys, make_client, make_server


def _is_tcp(address: str) -> bool:
    return address.startswith("tcp://")


def _keys_for(address: str, keys: CurveKeys | None) -> CurveKeys:
    if keys is None:
        raise ValueError(f"{address} is a TCP address but this server made no CURVE keys: refusing plain TCP")
    return keys


def bind(socket: zmq.Socket, address: str, keys: CurveKeys | None = None) -> zmq.Socket:
    if _is_tcp(address):
        make_server(socket, _keys_for(address, keys))
    socket.bind(address)
    return socket


# A connect whose peer has not bound yet is retried after ZMQ_RECONNECT_IVL, 100-200 ms by default, and what
# the socket sends meanwhile waits for it. Roles start side by side, so one often connects before its peer binds
# (the tokenizer to the scheduler's requests): the first request sent as READY was printed then waited for
# that retry (a one-token completion 62-101 ms against 10-12 for the next). Retries start at 5 ms here,
# doubling up to 100 ms.
RECONNECT_FIRST_MS = 5
RECONNECT_MOST_MS = 100


def connect(socket: zmq.Socket, address: str, keys: CurveKeys | None = None) -> zmq.Socket:
    if _is_tcp(address):
        make_client(socket, _keys_for(address, keys))
    socket.setsockopt(zmq.RECONNECT_IVL, RECONNECT_FIRST_MS)
    socket.setsockopt(zmq.RECONNECT_IVL_MAX, RECONNECT_MOST_MS)
    socket.connect(address)
    return socket


def connect_push(context: zmq.Context, address: str, keys: CurveKeys | None = None) -> zmq.Socket:
    """A PUSH socket connected to ``address`` that never holds the process open at exit (LINGER 0)."""
    push = context.socket(zmq.PUSH)
    push.setsockopt(zmq.LINGER, 0)
    return connect(push, address, keys)


def bind_push(context: zmq.Context, address: str, keys: CurveKeys | None = None) -> zmq.Socket:
    """A bound PUSH socket (LINGER 0): the sending side of a route whose receiver connects to it."""
    push = context.socket(zmq.PUSH)
    push.setsockopt(zmq.LINGER, 0)
    return bind(push, address, keys)
