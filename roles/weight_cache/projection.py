"""The weight_cache_daemon role's projection: the namespaces its process may read."""

from runtime_context.projections import declare_projection

PROJECTION = declare_projection("weight_cache_daemon", ("model", "weight_cache", "observability"))
