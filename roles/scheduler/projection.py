"""The scheduler role's projection: the namespaces its process may read."""

from runtime_context.projections import declare_projection

PROJECTION = declare_projection(
    "scheduler",
    (
        "model",
        "schedule",
        "memory",
        "parallel",
        "exec",
        "exec.moe",
        "weight_cache",
        "expert_backup",
        "observability",
    ),
)
