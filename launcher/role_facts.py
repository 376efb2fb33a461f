"""What a role would build from a resolved config, for `serve roles inspect --config` (headers only, no torch):
the same facts a running process states in its own inspect answer. Each role's settings are read as its
processes read them: this CLI process publishes as the role first."""

from __future__ import annotations

from typing import Any

from launcher.role_list import ROLES
from roles.model_files.family_facts import family_facts
from roles.model_files.weight_formats import weight_format_facts
from roles.scheduler.kernels.isa import kernel_path_fact, path_for, paths_this_cpu_has
from roles.tokenizer.tokenizer_facts import tokenizer_facts
from runtime_context import ResolvedConfig, get_exec, get_model, get_tokenizer, publish


def offline_facts(resolved: ResolvedConfig, role: str) -> dict[str, Any]:
    if role not in ("scheduler", "tokenizer"):
        return {}
    publish(resolved, role=role, projection=ROLES.named(role).projection)
    if role == "scheduler":
        settings, model_path = get_exec(), get_model().path
        path, have = path_for(settings.kernel_isa), paths_this_cpu_has()
        return {
            "family": family_facts(model_path),
            "weights": weight_format_facts(model_path, settings.weight_dtype),
            "kernels": kernel_path_fact(
                settings.kernel_isa, settings.weight_dtype, path, have, settings.activation_dtype
            ),
        }
    return {"tokenizer": tokenizer_facts(get_model().path, get_tokenizer().chat_template)}
