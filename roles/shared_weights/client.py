"""The client side of the weight cache: ask the daemon, map an identity's segment read-only.

Any failure (daemon down, stale file, load error) is a WeightCacheUnavailable that the scheduler turns into
a clear error or a fallback to loading from disk, as weight_cache.on_unavailable says; never wrong weights:
the identity names file, size, mtime, weight mode and format version, and the daemon re-checks the file
before answering. The scheduler builds its own model around the mapped tensors.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import zmq

from roles.model_files.model_path import resolve_model_path
from roles.model_files.model_shape import ModelShape
from roles.shared_weights.asking import WeightCacheUnavailable, ask
from roles.shared_weights.identity import identity_of
from roles.shared_weights.messages import Ping, Pong, TensorEntry, WeightAnswer, WeightQuery
from roles.shared_weights.segment import MappedSegment

log = logging.getLogger("roleserve.weight_cache")


@dataclass
class SharedWeights:
    """An identity's converted tensors, mapped; they stay valid while ``segment`` is referenced. ``tensors``
    (torch) are made on first use; ``arrays()`` gives numpy ones without torch where numpy has the dtypes."""

    shape: ModelShape
    entries: list[TensorEntry]
    eos_token_ids: list[int]
    segment: MappedSegment
    _tensors: dict | None = field(default=None, repr=False)

    @property
    def tensors(self) -> dict:
        if self._tensors is None:
            self._tensors = self.segment.tensors(self.entries)
        return self._tensors

    def arrays(self):
        return self.segment.arrays(self.entries)


def map_shared_weights(
    context: zmq.Context, address: str, model_path: str, weight_dtype: str, load_timeout_s: float = 900
) -> SharedWeights:
    """The tensors of ``model_path`` converted to ``weight_dtype``, in the daemon's shared memory (no copy)."""
    if not isinstance(ask(context, address, Ping(), timeout_s=5), Pong):
        raise WeightCacheUnavailable(f"unexpected answer from {address}")
    identity = identity_of(str(resolve_model_path(model_path)), weight_dtype)
    answer = ask(context, address, WeightQuery(identity), timeout_s=load_timeout_s)
    if not isinstance(answer, WeightAnswer) or answer.error is not None:
        raise WeightCacheUnavailable(getattr(answer, "error", None) or "malformed answer")
    if answer.identity != identity:
        raise WeightCacheUnavailable("the daemon answered for another model identity")
    mapped = MappedSegment(answer.segment)
    log.info("weights of %s mapped from %s (no copy)", model_path, answer.segment)
    return SharedWeights(ModelShape(**answer.shape), list(answer.tensors), list(answer.eos_token_ids), mapped)
