"""The encoder role's projection: the namespaces its process may read."""

from runtime_context.projections import declare_projection

PROJECTION = declare_projection("encoder", ("encoder", "exec", "observability"))
