"""Index of the roles that declare their projection next to their own code (imported by runtime_context)."""

import roles.dp_controller  # noqa: F401
import roles.encoder.projection  # noqa: F401
import roles.scheduler.projection  # noqa: F401
import roles.tokenizer.projection  # noqa: F401
import roles.weight_cache.projection  # noqa: F401
