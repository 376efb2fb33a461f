"""The encoder role's description: what it reads and where its process starts."""

from roles.role_description import RoleDescription

ROLE = RoleDescription(
    "encoder",
    ("encoder", "exec", "observability"),
    "roles.encoder.process:main",
    "embedding model for /v1/embeddings",
    serves_requests=True,
)
