"""Projections: the set of namespaces one role may read. Fail-closed: a role sees nothing it does not declare.

runtime_context keeps no list of roles. Each role declares its projection in its own package, the launcher
owns the one ordered list of roles, and `publish(resolved, role=..., projection=...)` receives the projection.
"""

from __future__ import annotations

from collections.abc import Iterable

from runtime_context.settings import NAMESPACES


def check_projection(role: str, namespaces: Iterable[str]) -> frozenset[str]:
    """The projection as a frozenset, or ValueError naming the role and any unknown namespace."""
    if isinstance(namespaces, str):
        raise TypeError(
            f"role {role!r}: a projection is a collection of namespaces, not the string {namespaces!r}"
        )
    allowed = frozenset(namespaces)
    unknown = sorted(allowed - set(NAMESPACES))
    if unknown:
        raise ValueError(
            f"role {role!r} declares unknown namespaces {unknown}; known: {', '.join(NAMESPACES)}"
        )
    return allowed


def ordered(namespaces: Iterable[str]) -> list[str]:
    """Namespaces in declaration order (for display)."""
    chosen = set(namespaces)
    return [ns for ns in NAMESPACES if ns in chosen]
