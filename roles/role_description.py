"""The plain description every role exports of itself: its name, its projection and its process entry.

The launcher keeps the one ordered list of these (launcher/role_list.py); nothing else lists roles.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from runtime_context.projections import check_projection


@dataclass(frozen=True)
class RoleDescription:
    name: str
    projection: frozenset[str]  # the namespaces its processes may read
    entry: str | None  # "package.module:function" run in a spawned child; None for the launcher itself
    summary: str  # one line: what the role does (inspect, README)
    collector: str | None  # "package.module:Class" of its metrics collector, if it has one
    serves_requests: bool  # requests wait on it: while it is late or down, /health answers 503
    # Its processes are forked from a parent that imported its entry module while the launcher was still
    # starting (launcher/preloaded_parent.py). That module must not import torch: the parent imports every
    # preloading role's module, whatever the configuration runs, and torch would put 1.5 s before any fork.
    preload: bool

    def __init__(
        self,
        name: str,
        projection: Iterable[str],
        entry: str | None,
        summary: str,
        collector: str | None = None,
        serves_requests: bool = False,
        preload: bool = False,
    ):
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "projection", check_projection(name, projection))
        object.__setattr__(self, "entry", entry)
        object.__setattr__(self, "summary", summary)
        object.__setattr__(self, "collector", collector)
        object.__setattr__(self, "serves_requests", serves_requests)
        object.__setattr__(self, "preload", preload)
