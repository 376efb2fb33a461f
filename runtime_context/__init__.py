"""roleserve's config system: declare, resolve once, publish per role, read through projected bags."""

from runtime_context.accessors import (
    exports_expert_balancedness_to_prometheus,
    get_encoder,
    get_exec,
    get_expert_backup,
    get_http,
    get_launcher,
    get_memory,
    get_model,
    get_observability,
    get_parallel,
    get_schedule,
    get_tokenizer,
    get_weight_cache,
    logs_expert_balancedness_to_server_log,
    published_leaves,
    reports_expert_balancedness,
)
from runtime_context.bags import Bag
from runtime_context.context import get_context, install, publish, reset_context
from runtime_context.errors import BagReadOnly, ConfigNotPublished, NamespaceNotProjected
from runtime_context.problems import EXIT_CONFIG_ERROR, ConfigError, ConfigProblem
from runtime_context.record import ResolvedConfig
from runtime_context.resolve import resolve

__all__ = [
    "EXIT_CONFIG_ERROR",
    "Bag",
    "BagReadOnly",
    "ConfigError",
    "ConfigNotPublished",
    "ConfigProblem",
    "NamespaceNotProjected",
    "ResolvedConfig",
    "get_context",
    "get_encoder",
    "get_exec",
    "get_expert_backup",
    "get_http",
    "get_launcher",
    "get_memory",
    "get_model",
    "get_observability",
    "get_parallel",
    "get_schedule",
    "get_tokenizer",
    "get_weight_cache",
    "published_leaves",
    "logs_expert_balancedness_to_server_log",
    "reports_expert_balancedness",
    "exports_expert_balancedness_to_prometheus",
    "install",
    "publish",
    "reset_context",
    "resolve",
]
