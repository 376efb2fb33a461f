"""Which namespaces each role may read. Fail-closed: a role sees nothing it does not declare.

A role with its own process code declares its projection next to that code (`roles/<role>/projection.py`,
indexed by `roles/projections.py`, loaded on first use); roles whose process code has not landed yet are
declared here.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable

from runtime_context.settings import NAMESPACES

_PROJECTIONS: dict[str, frozenset[str]] = {}


def declare_projection(role: str, namespaces: Iterable[str]) -> frozenset[str]:
    allowed = frozenset(namespaces)
    unknown = sorted(allowed - set(NAMESPACES))
    if unknown:
        raise ValueError(
            f"role {role!r} declares unknown namespaces {unknown}; known: {', '.join(NAMESPACES)}"
        )
    _PROJECTIONS[role] = allowed
    return allowed


ROLE_ORDER = (
    "launcher",
    "tokenizer",
    "scheduler",
    "dp_controller",
    "encoder",
    "weight_cache_daemon",
    "expert_backup",
    "test",
)
_role_modules_loaded = False


def _load_role_declarations() -> None:
    global _role_modules_loaded
    if not _role_modules_loaded:
        _role_modules_loaded = True
        importlib.import_module("roles.projections")


def projection_of(role: str) -> frozenset[str]:
    _load_role_declarations()
    try:
        return _PROJECTIONS[role]
    except KeyError:
        raise ValueError(f"unknown role {role!r}; known roles: {', '.join(known_roles())}") from None


def known_roles() -> list[str]:
    _load_role_declarations()
    order = {role: index for index, role in enumerate(ROLE_ORDER)}
    return sorted(_PROJECTIONS, key=lambda role: order.get(role, len(order)))


declare_projection("launcher", NAMESPACES)
declare_projection("expert_backup", ("model", "exec.moe", "expert_backup", "observability"))
declare_projection("test", NAMESPACES)
