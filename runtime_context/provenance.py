"""Where a resolved leaf's value came from: the winning source and its location."""

from __future__ import annotations

from dataclasses import dataclass

# Precedence, lowest to highest. derived and override come after resolution proper.
SOURCE_KINDS = ("default", "file", "env", "cli", "derived", "override")


@dataclass(frozen=True)
class Source:
    kind: str  # one of SOURCE_KINDS
    detail: str = ""  # "cfg.yaml:12:3", "ROLESERVE_HTTP__PORT", "--port", "<rule> from <leaves>", ...

    def __str__(self) -> str:
        return self.kind if not self.detail else f"{self.kind} {self.detail}"

    @classmethod
    def parse(cls, text: str) -> Source:
        kind, _, detail = text.partition(" ")
        if kind not in SOURCE_KINDS:
            raise ValueError(f"unknown source kind in {text!r}")
        return cls(kind, detail)


DEFAULT = Source("default")


def file_source(path: str, line: int, column: int) -> Source:
    return Source("file", f"{path}:{line}:{column}")


def env_source(name: str) -> Source:
    return Source("env", name)


def cli_source(flag: str) -> Source:
    return Source("cli", flag)


def derived_source(rule: str, inputs: tuple[str, ...]) -> Source:
    return Source("derived", f"{rule} from {', '.join(inputs) if inputs else 'nothing'}")


def override_source(source: str, caller: str) -> Source:
    return Source("override", f"{source} at {caller}")
