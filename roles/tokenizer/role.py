"""The tokenizer role's description: the HTTP front's reads and where its process starts."""

from roles.role_description import RoleDescription

ROLE = RoleDescription(
    "tokenizer",
    ("model", "http", "tokenizer", "exec.moe", "observability"),
    "roles.tokenizer.process:main",
    "HTTP API, tokenization, chat template, incremental detokenization, stop strings, SSE",
    collector="roles.tokenizer.metrics:ServingMetrics",
    preload=True,
)
