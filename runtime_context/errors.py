"""Errors raised by published config: reads outside a role's projection, and reads before publish."""

from __future__ import annotations

import os
import sys

_PACKAGE_PREFIX = os.path.dirname(os.path.abspath(__file__)) + os.sep


class NamespaceNotProjected(LookupError):
    """A role touched a namespace outside its projection (enforce mode).

    Built from plain args (no custom __init__) so it can be raised inside torch.compile-traced code.
    Args: role, namespace, caller ("file:line"), allowed namespaces, and optionally the action.
    """

    @property
    def role(self) -> str | None:
        return self.args[0]

    @property
    def namespace(self) -> str:
        return self.args[1]

    @property
    def caller(self) -> str:
        return self.args[2]

    @property
    def allowed(self) -> list[str]:
        return sorted(self.args[3])

    @property
    def action(self) -> str:
        return self.args[4] if len(self.args) > 4 else "read"

    def __str__(self) -> str:
        return (
            f"role {self.role!r} may not {self.action} namespace {self.namespace!r} (at {self.caller}); "
            f"its projection allows: {', '.join(self.allowed) or 'nothing'}"
        )


class ConfigNotPublished(RuntimeError):
    """Config was read before this process called publish(resolved, role=...)."""


class BagReadOnly(AttributeError):
    """Assignment to a bag leaf; the message says how to write instead."""


def caller_site() -> str:
    """file:line of the first frame outside runtime_context (the code that made the read)."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.compiler.is_compiling():
        return "<inside torch.compile>"  # frames are not inspectable while dynamo traces
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_PREFIX):
        frame = frame.f_back
    if frame is None:
        return "<unknown>"
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"
