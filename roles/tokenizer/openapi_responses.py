"""What each route answers, as /openapi.json declares it: its success (response_bodies.py for the routes that
are not completions), every error it gives, in the OpenAI shape (OpenAIErrorBody) with the headers some
carry; /metrics in text/plain and a completion asked with stream: true as server-sent events.

A request that fails validation is a 400 (openai_errors), never FastAPI's 422: ``drop_validation_422``
takes FastAPI's own 422 declaration out of the spec (operations.py has FastAPI write it). A client that goes away gets nothing, so the 499 the
server counts then is not declared either.
"""

from __future__ import annotations

from pydantic import BaseModel

from roles.tokenizer.openai_errors import OpenAIErrorBody
from roles.tokenizer.response_bodies import EmbeddingList, LiveRoles, ModelList


def _error(description: str, headers: dict | None = None) -> dict:
    declared: dict = {"model": OpenAIErrorBody, "description": description}
    if headers:
        declared["headers"] = headers
    return declared


def _success(model: type[BaseModel], description: str) -> dict[int, dict]:
    return {200: {"model": model, "description": description}}


def _by_status(*parts: dict) -> dict[int, dict]:
    merged = {status: declared for part in parts for status, declared in part.items()}
    return dict(sorted(merged.items()))


_WWW_AUTHENTICATE = {
    "WWW-Authenticate": {"required": True, "description": "the scheme to use", "schema": {"const": "Bearer"}}
}
_RETRY_AFTER = {
    "Retry-After": {
        "description": "whole seconds to wait before retrying; sent with server_overloaded",
        "schema": {"type": "integer", "minimum": 1},
    }
}

# The HTTP guard (http_guard.py) answers before any route.
_TOO_LARGE = {413: _error("the body is larger than http.max_request_bytes (request_too_large)")}
_GUARDED = {
    401: _error("the API key is missing or wrong (only with http.api_key set)", _WWW_AUTHENTICATE),
    **_TOO_LARGE,
}

# A completion's envelope (response_flow.FlowSpec.envelope): the whole one, or one chunk of a stream.
_ENVELOPE = ["id", "object", "created", "model", "choices"]
_COMPLETION = {"type": "object", "required": [*_ENVELOPE, "usage"]}
_CHUNK = {"type": "object", "required": _ENVELOPE}
_ERROR_REF = {"$ref": "#/components/schemas/OpenAIErrorBody"}

# One event of a stream: a chunk (or, when generation fails midway, an error body) as JSON; [DONE] last.
_SSE_EVENT = {
    "type": "object",
    "required": ["data"],
    "properties": {
        "data": {
            "anyOf": [
                {"const": "[DONE]"},
                {
                    "type": "string",
                    "contentMediaType": "application/json",
                    "contentSchema": {"anyOf": [_CHUNK, _ERROR_REF]},
                },
            ]
        },
    },
}

GENERATION = _by_status(
    {
        200: {
            "description": "the completion; with stream: true its chunks as server-sent events",
            "content": {
                "application/json": {"schema": _COMPLETION},
                "text/event-stream": {"schema": _SSE_EVENT},
            },
        },
        400: _error(
            "an invalid request: a field, a sampling option, the prompt, the messages or the context length"
        ),
        404: _error("the model is not the one served (model_not_found)"),
        503: _error(
            "at capacity (server_overloaded, with Retry-After), shutting down, timed out or the scheduler restarted",
            _RETRY_AFTER,
        ),
    },
    _GUARDED,
)

EMBEDDINGS = _by_status(
    _success(EmbeddingList, "one vector per input, in input order"),
    {
        400: _error("an invalid request: a field, empty input, more dimensions than the model has"),
        404: _error("embeddings are not served, or the model is not the encoder's (model_not_found)"),
        503: _error("the server is shutting down (server_shutting_down)"),
    },
    _GUARDED,
)

MODELS = _by_status(
    _success(ModelList, "the served model, and the encoder's when embeddings are served"), _GUARDED
)

TOKENIZE = _by_status(
    {
        400: _error("an invalid request: not exactly one of prompt and messages, bad text or token ids"),
        404: _error("the model is not the served one (model_not_found)"),
    },
    _GUARDED,
)


def _probe_503(description: str, statuses: list[str]) -> dict:
    schema = {
        "type": "object",
        "required": ["status"],
        "properties": {
            "status": {"type": "string", "enum": statuses},
            "unavailable": {"type": "array", "items": {"type": "string"}},
        },
    }
    return {503: {"description": description, "content": {"application/json": {"schema": schema}}}}


HEALTH = _by_status(
    _probe_503(
        "draining, starting, or a role requests wait on is late or down (named)", ["draining", "unavailable"]
    ),
    _TOO_LARGE,
)
READY = _by_status(
    _probe_503(
        "not to be sent requests now: draining, starting, a role requests wait on is late or down (named), or "
        "every scheduler's queue is full",
        ["draining", "unavailable", "at capacity"],
    ),
    _TOO_LARGE,
)

METRICS = _by_status(
    {
        200: {
            "description": "the Prometheus text exposition format",
            "content": {"text/plain": {"schema": {"type": "string"}}},
        },
        404: _error("metrics are disabled (observability.metrics: false)"),
    },
    _GUARDED,
)

_EXPERT_COMMAND = _by_status(
    {
        409: _error("the model or configuration does not allow it (expert_*_unavailable)"),
        504: _error("a scheduler did not answer in time"),
    },
    _GUARDED,
)
EXPERT_DISTRIBUTION = _by_status({404: _error("the action is not start, stop or dump")}, _EXPERT_COMMAND)
REBALANCE = _EXPERT_COMMAND

ROLES = _by_status(
    _success(LiveRoles, "what every running process published"),
    {503: _error("live inspect is not available")},
    _GUARDED,
)


def drop_validation_422(spec: dict) -> None:
    """The spec without the 422 FastAPI declares on every route that takes a body or a parameter."""
    for operations in spec["paths"].values():
        for operation in operations.values():
            operation["responses"].pop("422", None)
    schemas = spec.get("components", {}).get("schemas", {})
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)
