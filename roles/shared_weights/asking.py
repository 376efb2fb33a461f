"""One request to a weight-cache daemon (the weight_cache_daemon or the expert_backup) and its answer.

Torch-free, so the launcher can ping, start and stop daemons without importing torch (about 200 MB and a
second of start-up per process that imports it)."""

from __future__ import annotations

import zmq

from roles.shared_weights.messages import cache_decoder, cache_encoder


class WeightCacheUnavailable(Exception):
    pass


def ask(context: zmq.Context, address: str, message, timeout_s: float):
    socket = context.socket(zmq.REQ)
    socket.setsockopt(zmq.LINGER, 0)
    socket.connect(address)
    try:
        socket.send(cache_encoder.encode(message))
        if not socket.poll(int(timeout_s * 1000)):
            raise WeightCacheUnavailable(
                f"weight_cache_daemon at {address} did not answer within {timeout_s:g}s"
            )
        return cache_decoder.decode(socket.recv())
    finally:
        socket.close(0)
