"""The weight_cache_daemon role's description: what it reads and where its process starts."""

from roles.role_description import RoleDescription

ROLE = RoleDescription(
    "weight_cache_daemon",
    ("observability",),
    "roles.weight_cache.daemon:main",
    "loads and converts weights once into shared memory; serves them zero-copy, keyed by model identity",
)
