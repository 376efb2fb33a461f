"""The base of the HTTP front's pydantic models: each builds its validator on first use, not when its class
is made.

The preloaded parent imports some thirty of these models before any role can start, and building them all
there was about 0.1 s of its imports on a 2-core Zen 3 (docs/benchmarks.md). Most are used only to write
/openapi.json (the response bodies) or by the first request of their route: the first completion request
builds its model in about 25 ms, once; the spec builds whatever it describes.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class LazyModel(BaseModel):
    # A subclass's own model_config is merged with this one: defer_build stays on.
    model_config = ConfigDict(defer_build=True)
