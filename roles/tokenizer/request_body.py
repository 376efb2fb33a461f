"""A route's JSON body read into its pydantic model, as FastAPI reads it, without importing FastAPI.

The rules are FastAPI's for an operation with one body parameter (operations.py hands FastAPI the same
functions for /openapi.json, so the spec and this reading must agree):
- the body is parsed as JSON only when its content type is application/json or application/*+json; a body
  of any other type (or none) is validated as the raw bytes, which no model accepts;
- an empty body is a missing one ("Field required");
- JSON that does not parse is a json_invalid error at ("body", position); a body that cannot be read or
  decoded at all is a 400 "There was an error parsing the body";
- the model validates in Python mode (``model_validate(..., from_attributes=True)``), and each error's
  location starts with "body".
Errors come out as ``BodyProblem`` (pydantic's error dicts), which openai_errors answers as a 400.
"""

from __future__ import annotations

import email.message
import json

from pydantic import BaseModel, ValidationError
from starlette.exceptions import HTTPException
from starlette.requests import Request

PARSE_FAILED = "There was an error parsing the body"


class BodyProblem(Exception):
    """The body is not the operation's model: pydantic's errors, each ``loc`` starting with "body"."""

    def __init__(self, errors: list[dict]):
        super().__init__(errors[0]["msg"] if errors else "invalid body")
        self.errors = errors


def is_json_type(content_type: str) -> bool:
    message = email.message.Message()
    message["content-type"] = content_type
    if message.get_content_maintype() != "application":
        return False
    subtype = message.get_content_subtype()
    return subtype == "json" or subtype.endswith("+json")


_MISSING = object()


async def _received(request: Request):
    """The body as JSON, as bytes (not declared JSON), or _MISSING (empty)."""
    try:
        raw = await request.body()
        if not raw:
            return _MISSING
        content_type = request.headers.get("content-type")
        if not content_type or not is_json_type(content_type):
            return raw
        return json.loads(raw)
    except json.JSONDecodeError as error:
        problem = {
            "type": "json_invalid",
            "loc": ("body", error.pos),
            "msg": "JSON decode error",
            "input": {},
            "ctx": {"error": error.msg},
        }
        raise BodyProblem([problem]) from None
    except Exception as error:  # undecodable bytes, a client gone mid-body
        raise HTTPException(400, PARSE_FAILED) from error


async def read_body(request: Request, model: type[BaseModel]) -> BaseModel:
    value = await _received(request)
    if value is _MISSING:
        raise BodyProblem([{"type": "missing", "loc": ("body",), "msg": "Field required", "input": None}])
    try:
        return model.model_validate(value, from_attributes=True)
    except ValidationError as error:
        errors = error.errors(include_url=False)
        raise BodyProblem([{**each, "loc": ("body", *each["loc"])} for each in errors]) from None
