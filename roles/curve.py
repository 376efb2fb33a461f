"""CURVE on every TCP socket of a server: keys made per run by the launcher, and the checks that refuse any peer
that does not hold them.

The processes on the launcher's machine bind (they are CURVE servers); scheduler actors on other machines only
connect (CURVE clients). Each binding process runs a ZAP handler that admits exactly the run's client key, so
a peer without it (a plain socket, or CURVE with other keys) completes no handshake and delivers nothing.
ipc:// sockets stay as they are: they live in the owner-only runtime dir.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass, replace

import zmq
from zmq.auth.thread import ThreadAuthenticator

ZAP_DOMAIN = "roleserve"


@dataclass(frozen=True)
class CurveKeys:
    server_public: bytes
    server_secret: bytes | None  # None in what a connecting-only process (a scheduler actor) receives
    client_public: bytes
    client_secret: bytes

    @classmethod
    def generate(cls) -> CurveKeys:
        server_public, server_secret = zmq.curve_keypair()
        client_public, client_secret = zmq.curve_keypair()
        return cls(server_public, server_secret, client_public, client_secret)

    def for_clients(self) -> CurveKeys:
        """The keys a process that only connects needs: no server secret."""
        return replace(self, server_secret=None)

    def __repr__(self) -> str:  # secrets never reach a log or an error
        return f"CurveKeys(server_public={self.server_public.decode()}, client_public={self.client_public.decode()})"


class _RunClientOnly:
    """ZAP credentials check: only the run's client key is admitted."""

    def __init__(self, client_public: bytes):
        self.client_public = client_public

    def callback(self, domain: str, key: bytes) -> bool:  # the peer's public key, z85 as ours
        return hmac.compare_digest(key, self.client_public)


_authenticators: dict[int, ThreadAuthenticator] = {}  # id of the underlying context -> its ZAP handler


def _authenticator(context: zmq.Context, keys: CurveKeys) -> None:
    """Start the context's ZAP handler once; it lives as long as the process."""
    underlying = context.underlying
    if underlying in _authenticators:
        return
    auth = ThreadAuthenticator(zmq.Context.shadow(underlying))
    auth.start()
    auth.configure_curve_callback(domain=ZAP_DOMAIN, credentials_provider=_RunClientOnly(keys.client_public))
    _authenticators[underlying] = auth


def stop_authenticator(context: zmq.Context) -> None:
    """Stop the context's ZAP handler (its socket would keep context.term() waiting); a no-op without one."""
    auth = _authenticators.pop(context.underlying, None)
    if auth is not None:
        auth.stop()


def make_server(socket: zmq.Socket, keys: CurveKeys) -> None:
    if keys.server_secret is None:
        raise ValueError("this process holds no CURVE server secret: it may only connect")
    _authenticator(socket.context, keys)
    socket.zap_domain = ZAP_DOMAIN.encode()
    socket.curve_secretkey = keys.server_secret
    socket.curve_publickey = keys.server_public
    socket.curve_server = True


def make_client(socket: zmq.Socket, keys: CurveKeys) -> None:
    socket.curve_serverkey = keys.server_public
    socket.curve_publickey = keys.client_public
    socket.curve_secretkey = keys.client_secret
