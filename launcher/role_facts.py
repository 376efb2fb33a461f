"""What a role would build from a resolved config, for `serve roles inspect --config` (headers only, no torch):
the same facts a running process states in its own inspect answer. Each role's settings are read as its
processes read them: this CLI process publishes as the role first."""

from __future__ import annotations

from typing import Any

from launcher.role_list import ROLES
from roles.model_files.weight_formats import weight_format_facts
from roles.tokenizer.tokenizer_facts import tokenizer_facts
from runtime_context import ResolvedConfig, get_exec, get_model, get_tokenizer, publish


def offline_facts(resolved: ResolvedConfig, role: str) -> dict[str, Any]:
    if role not in ("scheduler", "tokenizer"):
        return {}
    publish(resolved, role=role, projection=ROLES.named(role).projection)
    if role == "scheduler":
        return {"weights": weight_format_facts(get_model().path, get_exec().weight_dtype)}
    return {"tokenizer": tokenizer_facts(get_model().path, get_tokenizer().chat_template)}
