"""A parent that imports the heavy roles' modules while the launcher is still starting, so their
processes are forked with those imports done instead of each paying them after a spawn.

It is the standard library's forkserver, started once by `serve` before the configuration is resolved. It
and every process forked from it keep the environment it started with, so it starts without any
ROLESERVE_ variable: a secret given there must reach no role except through its projection. It exits when
the launcher does (it reads end-of-file on its pipe from the launcher), and each process forked from it is
killed when it exits (PR_SET_PDEATHSIG, roles/child_process.py).

Only roles whose description says ``preload`` come from it; the others are spawned as before, so their own
imports run beside the preload on the other core instead of after it. What it imports, and how, is
launcher/preloaded_imports.py's.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.forkserver
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from roles.role_description import RoleDescription

# runtime_context.setting.ENV_PREFIX, written out: importing the configuration package here would delay the
# parent's start, which everything after waits for, by its import (0.06 s on a 2-core Zen 3).
# tests/launcher/test_preloaded_parent.py holds the two equal.
ENV_PREFIX = "ROLESERVE_"

# The launcher's own main module first: a forked child then finds it already imported and does not import
# the launcher again, as every spawned child does. Then the roles' modules.
_PRELOAD = ["__main__", "launcher.preloaded_imports"]


def preload_modules(roles: Iterable[RoleDescription]) -> list[str]:
    """The modules the parent imports for ``roles`` (launcher/preloaded_imports.py): the children's entry and
    every preloading role's module."""
    entries = sorted({role.entry.split(":")[0] for role in roles if role.preload and role.entry})
    return ["roles.child_process", *entries]


def start_preloading() -> None:
    """Start the parent now; it imports while the caller goes on. Safe to call twice (the second does
    nothing)."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(_PRELOAD)
    secrets_too = {name: os.environ.pop(name) for name in list(os.environ) if name.startswith(ENV_PREFIX)}
    try:
        multiprocessing.forkserver.ensure_running()
    finally:
        os.environ.update(secrets_too)


def preloaded_parent_pid() -> int | None:
    """The running parent's pid (what its children see as their parent), or None before it starts."""
    # The standard library keeps it on its one ForkServer instance; there is no public accessor.
    return getattr(multiprocessing.forkserver._forkserver, "_forkserver_pid", None)
