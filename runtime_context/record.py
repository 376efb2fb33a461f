"""The resolved configuration: an immutable, serialisable record with a canonical fingerprint.

Resolution happens once, in the launcher; children receive this record and never re-resolve. A child
receives only its role's projection of the record: the other leaves travel as digests, so the child can
still prove the fingerprint without seeing their values (secrets above all).

A secret enters the fingerprint only as whether it is set: the fingerprint is public (inspect, /roles, logs), so
nothing in it may be derived from a secret's value (an unsalted hash of a weak key is reversed offline). The values
are compared another way: the record carries a keyed digest of its secret values under a random key made at
resolution, and both travel only on the spawn pipe, so a child proves it holds the launcher's secrets without
anything about them being published, and two runs with the same key share nothing that identifies it.
Code outside runtime_context reads configuration through role bags, never through `raw_value`.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any

from runtime_context.provenance import Source
from runtime_context.setting import plain
from runtime_context.settings import SETTINGS

WITHHELD = "(withheld)"
# Every process needs the enforcement mode to build its bags, whatever its projection.
ALWAYS_SENT = frozenset({"roles.enforcement"})


class LeafWithheld(KeyError):
    """A leaf this process's record does not carry: it lies outside the role's projection."""

    def __str__(self) -> str:
        return f"{self.args[0]} is outside this process's projection: its record carries only a digest"


class ResolvedConfig:
    __slots__ = ("_values", "_sources", "_withheld", "_fingerprint", "_secrets_key")

    def __init__(
        self,
        values: Mapping[str, Any],
        sources: Mapping[str, Source],
        withheld: Mapping[str, str] | None = None,
        secrets_key: bytes | None = None,
    ):
        """`withheld` maps each leaf left out of `values` to its digest (a child's projected record).
        `secrets_key` keys the digest of the secret values (a new random one for a newly resolved record)."""
        withheld = dict(withheld or {})
        missing = set(SETTINGS) - set(values) - set(withheld)
        unknown = (set(values) | set(withheld)) - set(SETTINGS)
        both = set(values) & set(withheld)
        if missing or unknown or both:
            raise ValueError(
                "a resolved config needs every declared leaf once: "
                f"missing {sorted(missing)}, unknown {sorted(unknown)}, both sent and withheld {sorted(both)}"
            )
        ordered = {key: SETTINGS[key].check(values[key]) for key in SETTINGS if key in values}
        digests = {key: withheld.get(key) or leaf_digest(key, ordered[key]) for key in SETTINGS}
        object.__setattr__(self, "_values", MappingProxyType(ordered))
        object.__setattr__(self, "_sources", MappingProxyType({key: sources[key] for key in ordered}))
        object.__setattr__(self, "_withheld", MappingProxyType(withheld))
        object.__setattr__(self, "_fingerprint", _fingerprint(digests))
        object.__setattr__(self, "_secrets_key", secrets_key or os.urandom(32))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("ResolvedConfig is immutable; use get_context().override(...) in a process")

    @property
    def fingerprint(self) -> str:
        return self._fingerprint

    def has(self, key: str) -> bool:
        """Whether this record carries the leaf's value (False for a leaf withheld from this role)."""
        return key in self._values

    def raw_value(self, key: str) -> Any:
        try:
            return self._values[key]
        except KeyError:
            if key in self._withheld:
                raise LeafWithheld(key) from None
            raise

    def source(self, key: str) -> Source:
        try:
            return self._sources[key]
        except KeyError:
            if key in self._withheld:
                raise LeafWithheld(key) from None
            raise

    @property
    def raw_values(self) -> Mapping[str, Any]:
        """The values this record carries (every leaf in the launcher's record)."""
        return self._values

    @property
    def withheld(self) -> frozenset[str]:
        return frozenset(self._withheld)

    def display_value(self, key: str) -> Any:
        """The value as it may be shown: secrets become *** (null stays null), withheld leaves say so."""
        if key in self._withheld:
            return WITHHELD
        return shown_value(key, self._values[key])

    def display_source(self, key: str) -> str:
        return WITHHELD if key in self._withheld else str(self._sources[key])

    def projected(self, keep: Callable[[str], bool]) -> ResolvedConfig:
        """The same record carrying only the leaves `keep` accepts (plus ALWAYS_SENT); others become digests."""
        kept = {key: value for key, value in self._values.items() if key in ALWAYS_SENT or keep(key)}
        withheld = dict(self._withheld)
        withheld.update({key: leaf_digest(key, v) for key, v in self._values.items() if key not in kept})
        record = ResolvedConfig(kept, self._sources, withheld, self._secrets_key)
        assert record.fingerprint == self._fingerprint
        return record

    def for_projection(self, projection: Iterable[str]) -> ResolvedConfig:
        """The record a child of this projection receives (see projection_keeper)."""
        return self.projected(projection_keeper(projection, self.raw_value("roles.enforcement")))

    def to_wire(self) -> dict[str, Any]:
        """What this record carries, for the spawn pipe (never a socket): values, sources, withheld digests."""
        return {
            "values": {k: plain(v) for k, v in self._values.items()},
            "sources": {k: str(s) for k, s in self._sources.items()},
            "withheld": dict(self._withheld),
            "fingerprint": self._fingerprint,
            "secrets": {"key": self._secrets_key.hex(), "digest": self.secrets_digest()},
        }

    def secrets_digest(self) -> str:
        """Keyed digest of the secret values this record carries: compared on the spawn pipe, never published."""
        carried = {key: plain(v) for key, v in self._values.items() if SETTINGS[key].secret}
        message = json.dumps(carried, sort_keys=True, ensure_ascii=True).encode()
        return hmac.new(self._secrets_key, message, hashlib.sha256).hexdigest()

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> ResolvedConfig:
        secrets = data["secrets"]
        record = cls(
            data["values"],
            {k: Source.parse(s) for k, s in data["sources"].items()},
            data.get("withheld") or {},
            bytes.fromhex(secrets["key"]),
        )
        if record.fingerprint != data["fingerprint"]:
            raise ValueError(
                f"config record fingerprint mismatch: sent {data['fingerprint'][:12]}, "
                f"rebuilt {record.fingerprint[:12]}"
            )
        if not hmac.compare_digest(record.secrets_digest(), secrets["digest"]):
            raise ValueError("config record secrets mismatch: the secret values differ from the ones sent")
        return record

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ResolvedConfig) and other._fingerprint == self._fingerprint

    def __hash__(self) -> int:
        return hash(self._fingerprint)

    def __repr__(self) -> str:
        withheld = f", withheld={len(self._withheld)}" if self._withheld else ""
        return f"ResolvedConfig(fingerprint={self._fingerprint[:12]}, leaves={len(self._values)}{withheld})"


def shown_value(key: str, value: Any) -> Any:
    """A leaf's value as it may be shown (JSON-ready): a secret becomes *** (null stays null)."""
    value = SETTINGS[key].masked(value)
    return plain(value)


def projection_keeper(projection: Iterable[str], mode: str) -> Callable[[str], bool]:
    """Which leaves a child of this projection receives: its namespaces in enforce mode; in record and off
    modes every leaf (so reads outside the projection can be recorded or allowed), except secrets outside it."""
    allowed = frozenset(projection)

    def keep(key: str) -> bool:
        setting = SETTINGS[key]
        if setting.namespace in allowed:
            return True
        return mode != "enforce" and not setting.secret

    return keep


SECRET_SET = "(secret set)"


def canonical_value(key: str, value: Any) -> str:
    """One leaf's canonical JSON: a secret appears only as whether it is set, never as anything of its value."""
    if SETTINGS[key].secret and value is not None:
        value = SECRET_SET
    return json.dumps(plain(value), sort_keys=True, ensure_ascii=True)


def leaf_digest(key: str, value: Any) -> str:
    return hashlib.sha256(f"{key}={canonical_value(key, value)}".encode()).hexdigest()


def _fingerprint(digests: Mapping[str, str]) -> str:
    """sha256 over every leaf's digest in key order: provable from values or digests alike."""
    lines = "".join(f"{key}:{digests[key]}\n" for key in sorted(digests))
    return hashlib.sha256(lines.encode()).hexdigest()
