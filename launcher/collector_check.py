"""Checks `observability.stat_loggers` before anything starts: each role named runs a metrics collector,
and each class named exists and subclasses that role's own collector."""

from __future__ import annotations

from collections.abc import Mapping

from launcher.role_list import ROLES
from runtime_context.collectors import import_object
from runtime_context.constraints import Constraint


def stat_logger_problem(stat_loggers: Mapping[str, str]) -> str | None:
    """The first wrong entry, described; None when every entry is right."""
    with_collector = [role.name for role in ROLES if role.collector is not None]
    for role_name, path in stat_loggers.items():
        if role_name not in with_collector:
            return (
                f"{role_name!r}: not a role with a metrics collector (those are: {', '.join(with_collector)})"
            )
        default = import_object(ROLES.named(role_name).collector)
        try:
            cls = import_object(path)
        except (ImportError, AttributeError, ValueError) as error:
            return f"{role_name}: {path!r} cannot be imported: {error}"
        if not (isinstance(cls, type) and issubclass(cls, default)):
            return f"{role_name}: {path!r} must be a class that subclasses {default.__module__}.{default.__name__}"
    return None


STAT_LOGGERS_IMPORTABLE = Constraint(
    ("observability.stat_loggers",),
    lambda values: stat_logger_problem(values["observability.stat_loggers"]) is None,
    lambda values: str(stat_logger_problem(values["observability.stat_loggers"])),
)
