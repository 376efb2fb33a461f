"""Derivation rules the launcher applies at resolution: the built-in ones plus those that read the model file."""

from __future__ import annotations

from runtime_context.derivation import BUILTIN_RULES

LAUNCHER_RULES = (*BUILTIN_RULES,)
