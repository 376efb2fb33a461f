"""What a role would build from a resolved config, for `serve roles inspect --config` (headers only, no torch):
the same facts a running process states in its own inspect answer."""

from __future__ import annotations

from typing import Any

from roles.model_files.weight_formats import weight_format_facts
from runtime_context import ResolvedConfig


def offline_facts(resolved: ResolvedConfig, role: str) -> dict[str, Any]:
    if role == "scheduler":
        path, weight_dtype = resolved.raw_value("model.path"), resolved.raw_value("exec.weight_dtype")
        return {"weights": weight_format_facts(path, weight_dtype)}
    return {}
