"""The `serve` console script: when the command line serves, the preloaded parent starts before the launcher
imports the rest of itself, so the heavy roles' imports (torch) run beside the launcher's own instead of
after them.

Which command it is, is read from the words alone (argparse comes later, in launcher.cli): a command line
with no subcommand's name and no --help among its words serves. Either way launcher.cli decides again: a
config file named like a subcommand only makes the parent start there, a little later.
"""

from __future__ import annotations

import sys

SUBCOMMANDS = frozenset({"config", "roles", "cache", "model"})
HELP = frozenset({"-h", "--help"})


def serves(argv: list[str]) -> bool:
    return not (SUBCOMMANDS | HELP) & set(argv)


def main() -> int:
    argv = sys.argv[1:]
    if serves(argv):
        from launcher.preloaded_parent import start_preloading

        start_preloading()
    from launcher.cli import main as run

    return run(argv)
