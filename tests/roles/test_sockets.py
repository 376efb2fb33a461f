"""roles/sockets.py's connect: a peer that binds after the connect is retried from a few milliseconds on, and
what was sent before it bound reaches it."""

from __future__ import annotations

import zmq

from roles.sockets import RECONNECT_FIRST_MS, RECONNECT_MOST_MS, connect


def test_a_connect_retries_soon_then_backs_off(tmp_path):
    context = zmq.Context()
    push = context.socket(zmq.PUSH)
    try:
        connect(push, f"ipc://{tmp_path}/not-bound-yet")
        assert push.getsockopt(zmq.RECONNECT_IVL) == RECONNECT_FIRST_MS < 100  # zmq's own: 100
        assert push.getsockopt(zmq.RECONNECT_IVL_MAX) == RECONNECT_MOST_MS
    finally:
        push.close(0)
        context.term()


def test_what_is_sent_before_the_peer_binds_reaches_it_once_it_does(tmp_path):
    context = zmq.Context()
    address = f"ipc://{tmp_path}/late"
    push = connect(context.socket(zmq.PUSH), address)
    pull = context.socket(zmq.PULL)
    try:
        push.send(b"first", flags=zmq.NOBLOCK)  # queued: the connect has its pipe before any peer
        pull.bind(address)
        assert pull.poll(10_000), "the queued message never arrived"
        assert pull.recv() == b"first"
    finally:
        push.close(0)
        pull.close(0)
        context.term()
