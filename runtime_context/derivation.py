"""Derived leaves: computed once at resolution and recorded as `derived <rule> from <inputs>`."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from runtime_context.problems import ConfigProblem


class DerivationFailed(Exception):
    """A rule could not compute its value; the message says why (e.g. the model file is unreadable)."""

    def __init__(self, key: str, message: str):
        self.key = key
        super().__init__(message)


@dataclass(frozen=True)
class DerivationRule:
    name: str
    target: str  # the leaf it fills
    inputs: tuple[str, ...]  # the leaves (or facts) it reads, for provenance
    applies: Callable[[Mapping[str, Any]], bool]  # only when the user left the leaf on "auto"
    compute: Callable[[Mapping[str, Any]], Any]


def available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def scheduler_replicas(values: Mapping[str, Any]) -> int:
    """Scheduler processes of one server: the data-parallel replicas, or the expert-parallel ranks."""
    return max(values["parallel.dp_size"], values["parallel.ep_size"])


THREADS_FROM_CPUS = DerivationRule(
    name="available_cpus",
    target="exec.threads",
    inputs=("exec.threads=0", "cpu affinity", "parallel.dp_size", "parallel.ep_size"),
    applies=lambda values: values["exec.threads"] == 0,
    # The cores are shared by every scheduler replica; each computes on its share.
    compute=lambda values: max(1, available_cpus() // scheduler_replicas(values)),
)

# A heartbeat is sent every 0.25 s: silence of a few seconds is already news, well before a hang is declared.
LATE_FROM_HEARTBEAT = DerivationRule(
    name="late_before_hung",
    target="launcher.late_after_s",
    inputs=("launcher.late_after_s=0", "launcher.heartbeat_timeout_s"),
    applies=lambda values: values["launcher.late_after_s"] == 0,
    compute=lambda values: min(3.0, values["launcher.heartbeat_timeout_s"] / 2),
)

# A replica computes on exec.threads threads: its bundle reserves as many CPUs (after THREADS_FROM_CPUS).
RAY_CPUS_FROM_THREADS = DerivationRule(
    name="replica_threads",
    target="parallel.ray_cpus_per_replica",
    inputs=("parallel.ray_cpus_per_replica=0", "exec.threads"),
    applies=lambda values: values["parallel.ray_cpus_per_replica"] == 0,
    compute=lambda values: values["exec.threads"],
)

BUILTIN_RULES: tuple[DerivationRule, ...] = (THREADS_FROM_CPUS, LATE_FROM_HEARTBEAT, RAY_CPUS_FROM_THREADS)


def problem_from_failure(failure: DerivationFailed, where: str) -> ConfigProblem:
    return ConfigProblem(where, failure.key, str(failure))
