"""Config problems are collected, not raised one by one, so a user sees every mistake at once."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass

EXIT_CONFIG_ERROR = 2


@dataclass(frozen=True)
class ConfigProblem:
    where: str  # "cfg.yaml:12:3", "env ROLESERVE_HTTP__PORT", "cli --set ...", or "config" for cross-field checks
    key: str  # the dotted key, or "" when the problem is the file itself
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.key}: {self.message}" if self.key else f"{self.where}: {self.message}"


MAX_LISTED = 50  # problems listed by render(); a file of thousands of wrong keys prints a screenful


class ConfigError(Exception):
    """Every problem found while reading and validating a configuration."""

    def __init__(self, problems: Iterable[ConfigProblem]):
        self.problems = list(problems)
        super().__init__(self.render())

    def render(self) -> str:
        """Every problem, up to MAX_LISTED; beyond that, how many more there are."""
        count = len(self.problems)
        head = f"configuration has {count} problem{'s' if count != 1 else ''}:"
        lines = [head, *(f"  {p}" for p in self.problems[:MAX_LISTED])]
        if count > MAX_LISTED:
            lines.append(f"  ... and {count - MAX_LISTED} more (the first {MAX_LISTED} are listed)")
        return "\n".join(lines)


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """' (did you mean X?)' for the closest candidate, or '' when none is close."""
    matches = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return f" (did you mean {matches[0]}?)" if matches else ""
