"""The resolved configuration: an immutable, serialisable record with a canonical fingerprint.

Resolution happens once, in the launcher; children receive this record and never re-resolve.
Code outside runtime_context reads configuration through role bags, never through `raw_value`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from runtime_context.provenance import Source
from runtime_context.settings import SETTINGS

SECRET_MASK = "***"


class ResolvedConfig:
    __slots__ = ("_values", "_sources", "_fingerprint")

    def __init__(self, values: Mapping[str, Any], sources: Mapping[str, Source]):
        missing = set(SETTINGS) - set(values)
        unknown = set(values) - set(SETTINGS)
        if missing or unknown:
            raise ValueError(
                f"a resolved config needs every declared leaf: missing {missing}, unknown {unknown}"
            )
        ordered = {key: SETTINGS[key].check(values[key]) for key in SETTINGS}
        object.__setattr__(self, "_values", MappingProxyType(ordered))
        object.__setattr__(self, "_sources", MappingProxyType({key: sources[key] for key in SETTINGS}))
        object.__setattr__(self, "_fingerprint", _fingerprint(ordered))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("ResolvedConfig is immutable; use get_context().override(...) in a process")

    @property
    def fingerprint(self) -> str:
        return self._fingerprint

    def raw_value(self, key: str) -> Any:
        return self._values[key]

    def source(self, key: str) -> Source:
        return self._sources[key]

    @property
    def raw_values(self) -> Mapping[str, Any]:
        return self._values

    def display_value(self, key: str) -> Any:
        """The value as it may be shown: secrets become *** (null stays null)."""
        value = self._values[key]
        if SETTINGS[key].secret and value is not None:
            return SECRET_MASK
        return list(value) if isinstance(value, tuple) else value

    def to_wire(self) -> dict[str, Any]:
        """Everything a child needs, secrets included: sent only over the spawn pipe, never a socket."""
        return {
            "values": {k: list(v) if isinstance(v, tuple) else v for k, v in self._values.items()},
            "sources": {k: str(s) for k, s in self._sources.items()},
            "fingerprint": self._fingerprint,
        }

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> ResolvedConfig:
        record = cls(data["values"], {k: Source.parse(s) for k, s in data["sources"].items()})
        if record.fingerprint != data["fingerprint"]:
            raise ValueError(
                f"config record fingerprint mismatch: sent {data['fingerprint'][:12]}, "
                f"rebuilt {record.fingerprint[:12]}"
            )
        return record

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ResolvedConfig) and other._fingerprint == self._fingerprint

    def __hash__(self) -> int:
        return hash(self._fingerprint)

    def __repr__(self) -> str:
        return f"ResolvedConfig(fingerprint={self._fingerprint[:12]}, leaves={len(self._values)})"


def canonical_form(values: Mapping[str, Any]) -> str:
    """Sorted-key JSON where each secret appears only as the sha256 of its value."""
    shown = {}
    for key, value in values.items():
        if SETTINGS[key].secret and value is not None:
            value = "sha256:" + hashlib.sha256(str(value).encode()).hexdigest()
        shown[key] = list(value) if isinstance(value, tuple) else value
    return json.dumps(shown, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def _fingerprint(values: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical_form(values).encode()).hexdigest()
