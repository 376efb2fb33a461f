"""The dp_controller role's description: what it reads and where its process starts."""

from roles.role_description import RoleDescription

ROLE = RoleDescription(
    "dp_controller",
    ("parallel", "observability"),
    "roles.dp_controller.process:main",
    "dispatches requests to scheduler replicas: round_robin or shortest_queue",
    serves_requests=True,
)
