"""Pluggable metrics collectors: which class a role's process collects its metrics with.

`observability.stat_loggers` maps a role to an importable `module:Class`; the launcher checks every entry
before anything starts (the class exists and subclasses the role's own collector).
"""

from __future__ import annotations

import importlib

from runtime_context.accessors import get_observability
from runtime_context.context import get_context


def import_object(path: str) -> object:
    """`package.module:Name` -> the object; ImportError or AttributeError say what is missing."""
    module_name, sep, name = path.partition(":")
    if not sep or not module_name or not name:
        raise ValueError(f"{path!r} is not of the form package.module:ClassName")
    return getattr(importlib.import_module(module_name), name)


def resolve_collector_class(role: str, default_cls: type) -> type:
    """The collector class `role` is configured to use, or `default_cls` when none is registered for it
    or no configuration is published in this process."""
    if not get_context().is_config_namespace_published("observability"):
        return default_cls
    path = get_observability().stat_loggers.get(role)
    if path is None:
        return default_cls
    cls = import_object(path)
    if not (isinstance(cls, type) and issubclass(cls, default_cls)):
        raise TypeError(
            f"observability.stat_loggers[{role}] = {path!r} is not a subclass of {default_cls.__name__}"
        )
    return cls
