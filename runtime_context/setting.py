"""One declared setting: its namespace, type, default, bounds or choices, secrecy and docstring.

The CLI flags, YAML keys, environment names, docs and `serve roles inspect` all come from these.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

ENV_PREFIX = "ROLESERVE_"
SECRET_MASK = "***"  # how a secret value is shown anywhere: reprs, reports, the override log

_TRUE_WORDS = {"1", "true", "yes", "on"}
_FALSE_WORDS = {"0", "false", "no", "off"}
_NULL_WORDS = {"null", "none", "~", ""}


class SettingValueError(ValueError):
    """A value that does not fit its setting; the message says what would."""


@dataclass(frozen=True)
class Setting:
    namespace: str  # e.g. "exec.moe"
    name: str  # the leaf name, e.g. "recorder"
    type: type  # int, float, bool, str, list (of str) or dict (str to str)
    default: Any
    doc: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] | None = None
    optional: bool = False  # null allowed
    secret: bool = False

    @property
    def key(self) -> str:
        return f"{self.namespace}.{self.name}"

    @property
    def env_name(self) -> str:
        return ENV_PREFIX + self.key.replace(".", "__").upper()

    @property
    def type_name(self) -> str:
        name = {list: "list[str]", dict: "dict[str, str]"}.get(self.type, self.type.__name__)
        return f"{name} | null" if self.optional else name

    def masked(self, value: Any) -> Any:
        """The value as it may be shown: a secret becomes *** (null stays null)."""
        return SECRET_MASK if self.secret and value is not None else value

    def _got(self, value: Any) -> str:
        """What was given, as an error may say it: a secret shows only its type."""
        if self.secret and value is not None:
            return f"got {type(value).__name__} (value not shown: secret)"
        return f"got {_show(value)}"

    def describe_bounds(self) -> str:
        if self.choices:
            return "one of " + ", ".join(self.choices)
        parts = []
        if self.minimum is not None:
            parts.append(f">= {self.minimum:g}")
        if self.maximum is not None:
            parts.append(f"<= {self.maximum:g}")
        return " and ".join(parts)

    def check(self, value: Any) -> Any:
        """Validate a typed value (from YAML, code or a parsed string); return it in canonical form."""
        if value is None:
            if self.optional:
                return None
            raise SettingValueError(f"must be {self.type_name}; got null")
        if self.type is bool:
            if not isinstance(value, bool):
                raise SettingValueError(f"must be true or false; {self._got(value)}")
        elif self.type is int:
            if isinstance(value, bool) or not isinstance(value, int):
                raise SettingValueError(f"must be an integer; {self._got(value)}")
        elif self.type is float:
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise SettingValueError(f"must be a number; {self._got(value)}")
            try:
                value = float(value)
            except OverflowError:  # an integer beyond any float
                raise SettingValueError(f"must be a finite number; {self._got(value)}") from None
            if not math.isfinite(value):
                raise SettingValueError(f"must be a finite number; {self._got(value)}")
        elif self.type is str:
            if not isinstance(value, str):
                raise SettingValueError(f"must be a string; {self._got(value)}")
        elif self.type is list:
            if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
                raise SettingValueError(f"must be a list of strings; {self._got(value)}")
            value = tuple(value)
        elif self.type is dict:
            if not isinstance(value, Mapping) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in value.items()
            ):
                raise SettingValueError(f"must be a mapping of names to strings; {self._got(value)}")
            value = MappingProxyType(dict(sorted(value.items())))  # read-only, in canonical order
        if self.choices is not None and value not in self.choices:
            raise SettingValueError(f"must be one of {', '.join(self.choices)}; {self._got(value)}")
        if self.minimum is not None and value < self.minimum:
            raise SettingValueError(f"must be >= {self.minimum:g}; {self._got(value)}")
        if self.maximum is not None and value > self.maximum:
            raise SettingValueError(f"must be <= {self.maximum:g}; {self._got(value)}")
        return value

    def parse(self, text: str) -> Any:
        """Parse a string from the environment or `--set`, then check it."""
        stripped = text.strip()
        if self.optional and stripped.lower() in _NULL_WORDS:
            return None
        if self.type is bool:
            lowered = stripped.lower()
            if lowered in _TRUE_WORDS:
                return True
            if lowered in _FALSE_WORDS:
                return False
            raise SettingValueError(f"must be true or false; {self._got(text)}")
        if self.type is int:
            try:
                return self.check(int(stripped, 0))
            except ValueError as exc:
                if isinstance(exc, SettingValueError):
                    raise
                raise SettingValueError(f"must be an integer; {self._got(text)}") from None
        if self.type is float:
            try:
                return self.check(float(stripped))
            except ValueError as exc:
                if isinstance(exc, SettingValueError):
                    raise
                raise SettingValueError(f"must be a number; {self._got(text)}") from None
        if self.type is list:
            items = [] if not stripped else [item.strip() for item in stripped.split(",")]
            return self.check(items)
        if self.type is dict:  # name=value,name=value
            pairs = [item.partition("=") for item in stripped.split(",")] if stripped else []
            if any(not sep or not name.strip() for name, sep, _ in pairs):
                raise SettingValueError(f"must be name=value pairs separated by commas; {self._got(text)}")
            return self.check({name.strip(): value.strip() for name, _, value in pairs})
        return self.check(text)


def plain(value: Any) -> Any:
    """A checked value as plain JSON-ready data: tuples become lists, read-only mappings dicts."""
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, Mapping):
        return dict(value)
    return value


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list | tuple):
        return f"a list {list(value)!r}"
    return repr(value)
