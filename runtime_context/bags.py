"""Read-only config bags. Leaves and sub-bags are plain instance attributes, so a read is an ordinary
attribute load (free in enforce mode, traceable by torch.compile); the `_leaves` map stays the authority
for overrides, membership and restore.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from runtime_context.errors import BagReadOnly, NamespaceNotProjected, caller_site
from runtime_context.setting import SettingValueError
from runtime_context.settings import SETTINGS, child_namespaces, settings_in

_BAG_METHODS = frozenset({"override", "as_dict", "namespace"})
assert not _BAG_METHODS & {s.name for s in SETTINGS.values()}, "a leaf name shadows a bag method"


class _NotProjected:
    """Class-level stand-in for a leaf or sub-namespace outside the role's projection.

    Living on a per-shape subclass (not in a __getattr__ hook) keeps the allowed reads on CPython's
    fastest attribute path: a class that defines __getattr__ loses LOAD_ATTR specialisation.
    """

    def __init__(self, namespace: str):
        self.namespace = namespace

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, bag: Bag | None, owner: type) -> Any:
        if bag is None:
            return self
        view = bag._view  # a plain load, so torch.compile can trace the raise below
        raise NamespaceNotProjected(view.role, self.namespace, caller_site(), view.allowed)


# Each leaf write gets a fresh token, so a scoped override can tell whether its write was replaced.
_WRITE_TOKENS = itertools.count(1)

_SHAPED_CLASSES: dict[tuple[type, str, frozenset[str], frozenset[str]], type] = {}


def make_bag(
    bag_type: type[Bag], namespace: str, leaves: Mapping[str, Any] | None, children: Mapping[str, Bag], view
) -> Bag:
    """A bag whose class blocks every declared name of the namespace that this role may not see."""
    child_names = {c.rsplit(".", 1)[-1]: c for c in child_namespaces(namespace)}
    blocked = {}
    # A shell (leaves None) blocks every leaf; a projected bag blocks leaves its record withholds.
    blocked.update(
        {s.name: namespace for s in settings_in(namespace) if leaves is None or s.name not in leaves}
    )
    blocked.update({name: full for name, full in child_names.items() if full not in children})
    shape = (bag_type, namespace, frozenset(blocked), frozenset(leaves or ()))
    cls = _SHAPED_CLASSES.get(shape)
    if cls is None:
        attrs: dict[str, Any] = {name: _NotProjected(target) for name, target in blocked.items()}
        if bag_type is RecordingBag and leaves is not None:
            attrs.update({s.name: _RecordedLeaf() for s in settings_in(namespace) if s.name in leaves})
        cls = _SHAPED_CLASSES[shape] = type(f"{bag_type.__name__}[{namespace}]", (bag_type,), attrs)
    return cls(namespace, leaves, children, view)


class Bag:
    """One namespace of one role's published config."""

    def __init__(self, namespace: str, leaves: Mapping[str, Any] | None, children: Mapping[str, Bag], view):
        # leaves is None for a shell: a namespace outside the projection that only carries projected
        # sub-namespaces (e.g. the tokenizer sees exec.moe but not exec).
        object.__setattr__(self, "_namespace", namespace)
        object.__setattr__(self, "_is_projected", leaves is not None)
        object.__setattr__(self, "_leaves", dict(leaves or {}))
        # Declared leaves the record does not carry (a secret outside the projection in record mode).
        declared = {s.name for s in settings_in(namespace)}
        object.__setattr__(self, "_withheld", frozenset(declared - set(self._leaves)))
        object.__setattr__(self, "_writes", {})  # leaf -> token of its latest write
        object.__setattr__(self, "_children", dict(children))
        object.__setattr__(self, "_view", view)  # the ProjectionView: role, allowed set, read recorder
        object.__setattr__(self, "_record_read", view.record_read)
        for name, value in self._leaves.items():
            self._set_leaf(name, value)
        for name, child in self._children.items():
            object.__setattr__(self, name.rsplit(".", 1)[-1], child)

    @property
    def namespace(self) -> str:
        return self._namespace

    def __setattr__(self, name: str, value: Any) -> None:
        raise BagReadOnly(
            f"config bags are read-only: to change {self._namespace}.{name} use "
            f"get_context().override('<why>', {self._namespace.replace('.', '__')}__{name}=...) "
            f"or, scoped, `with bag.override({name}=...):`"
        )

    def __delattr__(self, name: str) -> None:
        self.__setattr__(name, None)

    def _require_projected(self, action: str = "read", names: Iterable[object] | None = None) -> None:
        """A shell's own leaves, and leaves the record withholds, are outside the projection: every look
        at them fails closed. `names` limits the check to those leaves; None means all of them."""
        withheld = self._withheld if names is None else self._withheld.intersection(names)
        if not self._is_projected or withheld:
            raise NamespaceNotProjected(
                self._view.role, self._namespace, caller_site(), self._view.allowed, action
            )

    def as_dict(self) -> dict[str, Any]:
        """A copy of this namespace's leaves (not its sub-namespaces)."""
        self._require_projected()
        return dict(self._leaves)

    def __contains__(self, name: object) -> bool:
        """Whether `name` is a leaf of this namespace (a sub-namespace is not a leaf)."""
        self._require_projected(names=[name])
        return name in self._leaves

    def __iter__(self) -> Iterator[str]:
        """The names of this namespace's leaves."""
        self._require_projected()
        return iter(list(self._leaves))

    def _check_leaves(self, leaves: Mapping[str, Any]) -> dict[str, Any]:
        """Validate every leaf before changing any (all-or-nothing)."""
        self._require_projected("override", leaves)
        checked, errors = {}, []
        for name, value in leaves.items():
            key = f"{self._namespace}.{name}"
            if key not in SETTINGS:
                errors.append(f"{key}: unknown setting")
                continue
            try:
                checked[name] = SETTINGS[key].check(value)
            except SettingValueError as exc:
                errors.append(f"{key}: {exc}")
        if errors:
            raise ValueError("override rejected, nothing changed: " + "; ".join(errors))
        return checked

    def _store(self, name: str, value: Any) -> None:
        # object.__setattr__ keeps the instance on CPython's fastest attribute path (inline values).
        object.__setattr__(self, name, value)

    def _set_leaf(self, name: str, value: Any, token: int | None = None) -> None:
        self._leaves[name] = value
        self._writes[name] = next(_WRITE_TOKENS) if token is None else token
        self._store(name, value)

    def _leaf_state(self) -> dict[str, tuple[Any, int]]:
        """Every leaf's value and write token, for a snapshot to put back exactly."""
        return {name: (value, self._writes[name]) for name, value in self._leaves.items()}

    def _restore_leaf_state(self, state: Mapping[str, tuple[Any, int]]) -> None:
        for name, (value, token) in state.items():
            self._set_leaf(name, value, token)

    def override(self, **leaves: Any) -> AbstractContextManager[Bag]:
        """Scoped, transactional override of this namespace's leaves; restored on exit.

        Checked here, at the call, so a refusal names the caller. On exit only the leaves still holding
        this scope's write are put back: a permanent get_context().override(...) of the same leaf made
        inside the scope stays, as its log entry says.
        """
        return self._scoped_override(self._check_leaves(leaves))

    @contextmanager
    def _scoped_override(self, checked: Mapping[str, Any]) -> Iterator[Bag]:
        previous = {name: (self._leaves[name], self._writes[name]) for name in checked}
        for name, value in checked.items():
            self._set_leaf(name, value)
        written = {name: self._writes[name] for name in checked}
        try:
            yield self
        finally:
            for name, (value, token) in previous.items():
                if self._writes[name] == written[name]:
                    self._set_leaf(name, value, token)

    def __repr__(self) -> str:
        shown = ", ".join(
            f"{k}={v!r}" for k, v in self._leaves.items() if not SETTINGS[f"{self._namespace}.{k}"].secret
        )
        return f"Bag({self._namespace}: {shown})"


class RecordingBag(Bag):
    """record mode: every read is allowed and (role, namespace, leaf, call site) is counted.

    Each leaf is a data descriptor on the bag's class (see make_bag), which wins over the instance
    attribute, so only leaf reads pay for recording; other attributes stay plain.
    """

    def _store(self, name: str, value: Any) -> None:
        self.__dict__[name] = value  # past the leaf's descriptor, whose __set__ refuses writes


class _RecordedLeaf:
    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, bag: Bag | None, owner: type) -> Any:
        if bag is None:
            return self
        frame = sys._getframe(1)  # the reading code itself
        bag._record_read(bag._namespace, self.name, frame.f_code.co_filename, frame.f_lineno)
        return bag._leaves[self.name]

    def __set__(self, bag: Bag, value: Any) -> None:
        bag.__setattr__(self.name, value)  # raises BagReadOnly with the way to write instead
