"""The process-wide published config: publish(), the context's bookkeeping, overrides and snapshots."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from runtime_context.bags import Bag
from runtime_context.errors import ConfigNotPublished, NamespaceNotProjected, caller_site
from runtime_context.projections import check_projection
from runtime_context.provenance import Source, override_source
from runtime_context.record import ResolvedConfig
from runtime_context.settings import NAMESPACES, SETTINGS
from runtime_context.view import ProjectionView, build_tree

log = logging.getLogger("roleserve.config")


@dataclass(frozen=True)
class OverrideEntry:
    source: str  # why, as the caller said it
    key: str
    old: Any  # a secret's old and new values are kept only as ***
    new: Any
    caller: str  # file:line
    at: float  # time.time()

    def shown(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class PublishReport:
    role: str | None
    fingerprint: str
    dropped_overrides: tuple[OverrideEntry, ...]


@dataclass(frozen=True)
class ContextSnapshot:
    state: dict[str, Any]
    # namespace -> leaf -> (value, write token); out of the repr, as it holds secrets in the clear
    leaves: dict[str, dict[str, tuple[Any, int]]] = field(repr=False)


class RuntimeContext:
    def __init__(self) -> None:
        self._clear()

    def _clear(self) -> None:
        self.resolved: ResolvedConfig | None = None
        self.publish_role: str | None = None
        self.published_pid: int | None = None
        self.published_at: float | None = None
        self.view: ProjectionView | None = None
        self.bags: dict[str, Bag] = {}
        self._overrides: list[OverrideEntry] = []

    # -- publish -------------------------------------------------------------------------------
    def publish(
        self, resolved: ResolvedConfig, role: str | None, projection: frozenset[str]
    ) -> PublishReport:
        allowed = projection
        mode = resolved.raw_value("roles.enforcement") if role is not None else "off"
        dropped = tuple(self._overrides)
        if dropped:
            log.warning(
                "re-publish as %s drops %d override(s): %s",
                role,
                len(dropped),
                ", ".join(f"{e.key} ({e.source})" for e in dropped),
            )
        self.resolved = resolved
        self.publish_role = role
        self.published_pid = os.getpid()
        self.published_at = time.time()
        self.view = ProjectionView(role=role, allowed=allowed, mode=mode)
        self.bags = build_tree(resolved, self.view)
        self._overrides = []
        return PublishReport(role, resolved.fingerprint, dropped)

    @property
    def is_published(self) -> bool:
        return self.resolved is not None

    @property
    def fingerprint(self) -> str | None:
        return self.resolved.fingerprint if self.resolved else None

    @property
    def mode(self) -> str | None:
        return self.view.mode if self.view else None

    def _require_published(self) -> ProjectionView:
        if self.view is None:
            raise ConfigNotPublished(
                "no configuration is published in this process: its entry must call "
                "runtime_context.publish(resolved, role=...) before reading config"
            )
        return self.view

    def bag(self, namespace: str) -> Bag:
        try:
            return self.bags[namespace]
        except KeyError:
            view = self._require_published()
            if namespace not in NAMESPACES:
                raise ValueError(f"unknown namespace {namespace!r}") from None
            raise NamespaceNotProjected(view.role, namespace, caller_site(), view.allowed) from None

    def is_config_namespace_published(self, namespace: str) -> bool:
        if namespace not in NAMESPACES:
            raise ValueError(f"unknown namespace {namespace!r}; known: {', '.join(NAMESPACES)}")
        if self.view is None:
            return False
        if namespace not in self.view.visible:
            raise NamespaceNotProjected(
                self.view.role, namespace, caller_site(), self.view.allowed, "ask about"
            )
        return True

    # -- reading, for inspect --------------------------------------------------------------------
    def current_value(self, key: str) -> Any:
        namespace, _, leaf = key.rpartition(".")
        bag = self.bag(namespace)
        bag._require_projected(names=[leaf])
        return bag._leaves[leaf]

    def current_source(self, key: str) -> Source:
        for entry in reversed(self._overrides):
            if entry.key == key:
                return override_source(entry.source, entry.caller)
        assert self.resolved is not None
        return self.resolved.source(key)

    def recorded_reads(self) -> list[tuple[str | None, str, str, str, int]]:
        """(role, namespace, leaf, file:line, count) for every distinct read seen in record mode."""
        view = self._require_published()
        return [
            (view.role, namespace, leaf, f"{filename}:{line}", count)
            for (namespace, leaf, filename, line), count in sorted(view.reads.items())
        ]

    # -- overrides -------------------------------------------------------------------------------
    def override(self, source: str, **leaves: Any) -> None:
        """The one permanent mutation: validated all-or-nothing, logged with its source and caller.

        Keys are `namespace__leaf` (keyword form) or dotted (`**{"schedule.max_running_requests": 8}`).
        """
        self._require_published()
        caller = caller_site()
        by_namespace: dict[str, dict[str, Any]] = {}
        for name, value in leaves.items():
            key = name if "." in name else name.replace("__", ".")
            if key not in SETTINGS:
                raise ValueError(f"override rejected, nothing changed: {key}: unknown setting")
            namespace, _, leaf = key.rpartition(".")
            by_namespace.setdefault(namespace, {})[leaf] = value
        checked = {ns: self.bag(ns)._check_leaves(group) for ns, group in by_namespace.items()}
        now = time.time()
        for namespace, group in checked.items():
            bag = self.bags[namespace]
            for leaf, value in group.items():
                key = f"{namespace}.{leaf}"
                old, new = SETTINGS[key].masked(bag._leaves[leaf]), SETTINGS[key].masked(value)
                self._overrides.append(OverrideEntry(source, key, old, new, caller, now))
                bag._set_leaf(leaf, value)
                log.info("override %s by %s at %s", key, source, caller)

    def overrides_log(self) -> list[OverrideEntry]:
        return [replace(entry) for entry in self._overrides]

    # -- snapshot / restore ----------------------------------------------------------------------
    def snapshot(self) -> ContextSnapshot:
        state = {
            name: getattr(self, name)
            for name in ("resolved", "publish_role", "published_pid", "published_at", "view", "bags")
        }
        state["_overrides"] = list(self._overrides)
        state["reads"] = dict(self.view.reads) if self.view else None
        return ContextSnapshot(state, {ns: bag._leaf_state() for ns, bag in self.bags.items()})

    def restore(self, snapshot: ContextSnapshot) -> None:
        state = dict(snapshot.state)
        reads = state.pop("reads")
        for name, value in state.items():
            setattr(self, name, value if name != "_overrides" else list(value))
        if self.view is not None and reads is not None:
            self.view.reads.clear()
            self.view.reads.update(reads)
        for namespace, leaves in snapshot.leaves.items():
            self.bags[namespace]._restore_leaf_state(leaves)

    @contextmanager
    def scoped(self) -> Iterator[RuntimeContext]:
        """Everything done inside (publishes, overrides, reads) is undone on exit."""
        saved = self.snapshot()
        try:
            yield self
        finally:
            self.restore(saved)

    def reset(self) -> None:
        self._clear()


_CONTEXT = RuntimeContext()


def get_context() -> RuntimeContext:
    return _CONTEXT


def publish(resolved: ResolvedConfig, *, role: str, projection: Iterable[str]) -> PublishReport:
    """The first act of every process entry: stamp this process with its role and build its bags.

    `projection` is the role's declared namespaces (its RoleDescription); runtime_context keeps no role list.
    """
    if role is None:
        raise ValueError("publish needs a role; use install() for a role-less, unprojected install")
    return _CONTEXT.publish(resolved, role, check_projection(role, projection))


def install(resolved: ResolvedConfig) -> PublishReport:
    """A direct install without a role (tools, notebooks): every namespace visible, no role stamp."""
    return _CONTEXT.publish(resolved, None, frozenset(NAMESPACES))


def reset_context() -> None:
    _CONTEXT.reset()
