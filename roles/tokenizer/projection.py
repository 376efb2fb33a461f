"""The tokenizer role's projection: the namespaces its process (HTTP front) may read."""

from runtime_context.projections import declare_projection

PROJECTION = declare_projection("tokenizer", ("model", "http", "tokenizer", "observability"))
