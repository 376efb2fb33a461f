"""Every TCP socket is CURVE-authenticated with the run's keys: a peer holding them is heard; a plain peer, or
one with CURVE keys of its own, completes no handshake and delivers nothing. Real sockets on loopback."""

from __future__ import annotations

import contextlib

import zmq

from roles.curve import CurveKeys, stop_authenticator
from roles.sockets import bind, connect

HEARD_WITHIN_MS = 5000
REFUSED_AFTER_MS = 1500


@contextlib.contextmanager
def zmq_context():
    context = zmq.Context()
    try:
        yield context
    finally:
        stop_authenticator(context)
        context.destroy(linger=0)


def _receiver(context: zmq.Context, keys: CurveKeys) -> tuple[zmq.Socket, str]:
    pull = context.socket(zmq.PULL)
    pull.setsockopt(zmq.LINGER, 0)
    bind(pull, "tcp://127.0.0.1:0", keys)
    return pull, pull.getsockopt_string(zmq.LAST_ENDPOINT)


def _push(context: zmq.Context) -> zmq.Socket:
    push = context.socket(zmq.PUSH)
    push.setsockopt(zmq.LINGER, 0)
    return push


def test_a_peer_with_the_runs_keys_is_heard():
    keys = CurveKeys.generate()
    with zmq_context() as context:
        pull, address = _receiver(context, keys)
        push = connect(_push(context), address, keys.for_clients())
        push.send(b"hello")
        assert pull.poll(HEARD_WITHIN_MS) and pull.recv() == b"hello"


def test_a_plain_peer_and_a_peer_with_other_keys_deliver_nothing():
    keys, others = CurveKeys.generate(), CurveKeys.generate()
    with zmq_context() as context:
        pull, address = _receiver(context, keys)
        plain = _push(context)
        plain.connect(address)  # no CURVE at all
        plain.send(b"plain")
        # CURVE, knows the server's public key, but its own client key is not the run's
        impostor = connect(
            _push(context),
            address,
            CurveKeys(keys.server_public, None, others.client_public, others.client_secret),
        )
        impostor.send(b"impostor")
        assert not pull.poll(REFUSED_AFTER_MS)
        honest = connect(_push(context), address, keys.for_clients())
        honest.send(b"honest")  # the socket still serves the run's peers
        assert pull.poll(HEARD_WITHIN_MS) and pull.recv() == b"honest"
        assert not pull.poll(200)


def test_plain_tcp_is_refused_and_a_client_cannot_serve():
    keys = CurveKeys.generate()
    with zmq_context() as context:
        socket = context.socket(zmq.PULL)
        socket.setsockopt(zmq.LINGER, 0)
        try:
            bind(socket, "tcp://127.0.0.1:0", None)
            raise AssertionError("plain TCP was bound")
        except ValueError as error:
            assert "refusing plain TCP" in str(error)
        try:
            bind(socket, "tcp://127.0.0.1:0", keys.for_clients())
            raise AssertionError("a client bound a server socket")
        except ValueError as error:
            assert "may only connect" in str(error)
        socket.close(0)


def test_secret_keys_never_appear_in_the_repr():
    keys = CurveKeys.generate()
    shown = repr(keys)
    assert keys.server_secret.decode() not in shown and keys.client_secret.decode() not in shown
    assert keys.server_public.decode() in shown
