"""The sampling options as the OpenAPI request schemas show them, taken from their one declaration
(``roles.protocol.SamplingFields``): the request models keep them as extra fields, so without this the spec
would not say that `temperature` or `max_tokens` exist, nor their bounds."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

import msgspec

from roles.protocol import SamplingFields


@cache
def _sampling_properties() -> dict[str, dict]:
    _, components = msgspec.json.schema_components([SamplingFields])
    properties = components["SamplingFields"]["properties"]
    # The HTTP front's own default, not the struct's: what fits the context, at most tokenizer.default_max_tokens.
    properties["max_tokens"].pop("default")
    properties["max_tokens"]["description"] += (
        " (default: tokenizer.default_max_tokens, shrunk to fit the context)"
    )
    # null is accepted everywhere and means "not given".
    return {
        name: schema if "anyOf" in schema else {"anyOf": [schema, {"type": "null"}]}
        for name, schema in properties.items()
    }


def with_sampling_options(aliases: dict[str, str] | None = None) -> Callable[[dict], None]:
    """A pydantic ``json_schema_extra`` adding every sampling option the model does not declare itself, and
    each alias (the client's name -> the option it sets) with that option's schema."""
    aliases = aliases or {}

    def extend(schema: dict) -> None:
        properties = schema.setdefault("properties", {})
        for name, option in _sampling_properties().items():
            properties.setdefault(name, dict(option))
        for alias, name in aliases.items():
            properties.setdefault(alias, dict(_sampling_properties()[name]))

    return extend
