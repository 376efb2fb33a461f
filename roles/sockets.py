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


def connect(socket: zmq.Socket, address: str, keys: CurveKeys | None = None) -> zmq.Socket:
    if _is_tcp(address):
        make_client(socket, _keys_for(address, keys))
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
