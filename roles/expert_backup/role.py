"""The expert_backup role's description: what it reads and where its process starts."""

from roles.role_description import RoleDescription

ROLE = RoleDescription(
    "expert_backup",
    ("model", "exec", "expert_backup", "observability"),
    "roles.expert_backup.process:main",
    "holds every expert of the MoE model in shared memory; ranks take their experts from it, a rebalance too",
)
