"""The weight mode a scheduler can run: ``auto`` needs the CPU kernels."""

from __future__ import annotations

import logging

from roles.scheduler.kernels import native

log = logging.getLogger("roleserve.scheduler")
_WARNED: set[str] = set()


def runnable_weight_dtype(weight_dtype: str) -> str:
    """``auto`` falls back to ``exact`` (with a warning that says why) where the CPU kernels cannot run."""
    if weight_dtype != "auto":
        return weight_dtype
    reason = native.unavailable_reason()
    if reason is None:
        return "auto"
    if reason not in _WARNED:
        _WARNED.add(reason)
        log.warning("exec.weight_dtype auto runs as exact (float32): %s", reason)
    return "exact"
