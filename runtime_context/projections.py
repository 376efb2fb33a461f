"""Which namespaces each role may read. Fail-closed: a role sees nothing it does not declare.

Roles whose process code has not landed yet are declared here; a role that has its own module
declares its projection there with `declare_projection` and this table takes it from that module.
"""

from __future__ import annotations

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


def projection_of(role: str) -> frozenset[str]:
    try:
        return _PROJECTIONS[role]
    except KeyError:
        raise ValueError(f"unknown role {role!r}; known roles: {', '.join(known_roles())}") from None


def known_roles() -> list[str]:
    return list(_PROJECTIONS)


declare_projection("launcher", NAMESPACES)
declare_projection("tokenizer", ("model", "http", "tokenizer", "schedule", "observability"))
declare_projection(
    "scheduler",
    (
        "model",
        "schedule",
        "memory",
        "parallel",
        "exec",
        "exec.moe",
        "weight_cache",
        "expert_backup",
        "observability",
    ),
)
declare_projection("dp_controller", ("parallel", "schedule", "observability"))
declare_projection("encoder", ("encoder", "exec", "observability"))
declare_projection("weight_cache_daemon", ("model", "weight_cache", "observability"))
declare_projection("expert_backup", ("model", "exec.moe", "expert_backup", "observability"))
declare_projection("test", NAMESPACES)
