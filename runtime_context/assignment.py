"""One setting's value as a source assigned it: a --config file's line, a --set flag, an environment variable."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from runtime_context.provenance import Source
from runtime_context.settings import SETTINGS


@dataclass(frozen=True)
class Assignment:
    key: str
    value: Any
    source: Source

    def __repr__(self) -> str:
        return f"Assignment({self.key}={SETTINGS[self.key].masked(self.value)!r} from {self.source})"
