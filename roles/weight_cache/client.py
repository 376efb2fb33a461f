"""The scheduler's side of the weight cache: ask for an identity, map its segment read-only, rebuild the model.

Any failure (daemon down, stale file, load error) is either a clear error or a fallback to loading from
disk, as weight_cache.on_unavailable says; never wrong weights: the identity names file, size, mtime,
weight mode and format version, and the daemon re-checks the file before answering.
"""

from __future__ import annotations

import logging

import zmq

from roles.model_files.model_path import resolve_model_path
from roles.model_files.model_shape import ModelShape
from roles.weight_cache.identity import identity_of
from roles.weight_cache.messages import Ping, Pong, WeightAnswer, WeightQuery, cache_decoder, cache_encoder
from roles.weight_cache.segment import MappedSegment

log = logging.getLogger("roleserve.weight_cache")


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


def load_shared_model(
    context: zmq.Context, address: str, model_path: str, weight_dtype: str, load_timeout_s: float = 900
):
    """(model, shape, eos ids) whose tensors live in the daemon's shared memory."""
    from roles.scheduler.models.model_state import model_from_state

    if not isinstance(ask(context, address, Ping(), timeout_s=5), Pong):
        raise WeightCacheUnavailable(f"unexpected answer from {address}")
    identity = identity_of(str(resolve_model_path(model_path)), weight_dtype)
    answer = ask(context, address, WeightQuery(identity), timeout_s=load_timeout_s)
    if not isinstance(answer, WeightAnswer) or answer.error is not None:
        raise WeightCacheUnavailable(getattr(answer, "error", None) or "malformed answer")
    if answer.identity != identity:
        raise WeightCacheUnavailable("the daemon answered for another model identity")
    mapped = MappedSegment(answer.segment)
    shape = ModelShape(**answer.shape)
    model = model_from_state(shape, weight_dtype, mapped.tensors(answer.tensors))
    model.weight_segment = mapped  # the mapping lives as long as the model
    model.eos_token_ids = list(answer.eos_token_ids)
    log.info("weights of %s mapped from %s (no copy)", model_path, answer.segment)
    return model, shape
