"""The scheduler role's description: what it reads and where its process starts."""

from roles.role_description import RoleDescription

ROLE = RoleDescription(
    "scheduler",
    ("model", "schedule", "memory", "exec", "exec.moe", "weight_cache", "observability"),
    "roles.scheduler.process:main",
    "continuous batching, paged KV cache with prefix reuse, chunked prefill, model runner, sampling",
)
