"""The scheduler role's description: what it reads and where its process starts."""

from roles.role_description import RoleDescription

ROLE = RoleDescription(
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
    "roles.scheduler.process:main",
    "continuous batching, paged KV cache with prefix reuse, chunked prefill, model runner, sampling; "
    "with parallel.ep_size > 1 one expert-parallel rank",
    serves_requests=True,
    preload=True,
)
