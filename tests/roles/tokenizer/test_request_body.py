"""request_body reads a body as FastAPI does: the same requests sent to a FastAPI route and to an operation
taking the same model get the same status and the same first error (type, location, message), or the same
validated model."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException

from roles.tokenizer.operations import Operations, OperationsApp
from roles.tokenizer.request_body import BodyProblem, is_json_type


class Item(BaseModel):
    model_config = ConfigDict(strict=True)

    name: str
    count: int = Field(default=1, ge=0)
    tags: list[str] = []


def _error_json(errors) -> JSONResponse:
    first = errors[0]
    return JSONResponse({"type": first["type"], "loc": list(first["loc"]), "msg": first["msg"]}, 400)


def _http_json(error: HTTPException) -> JSONResponse:
    return JSONResponse({"detail": error.detail}, error.status_code)


def _fastapi_app() -> FastAPI:
    app = FastAPI()

    async def on_invalid(request, error: RequestValidationError):
        return _error_json(error.errors())

    async def on_http(request, error: HTTPException):
        return _http_json(error)

    app.add_exception_handler(RequestValidationError, on_invalid)
    app.add_exception_handler(HTTPException, on_http)

    @app.post("/items")
    async def items(body: Item):
        return body.model_dump()

    return app


def _operations_app() -> OperationsApp:
    api = Operations(title="t")

    @api.post("/items")
    async def items(body: Item):
        return body.model_dump()

    app = OperationsApp(api)

    async def on_invalid(request, error: BodyProblem):
        return _error_json(error.errors)

    async def on_http(request, error: HTTPException):
        return _http_json(error)

    app.add_exception_handler(BodyProblem, on_invalid)
    app.add_exception_handler(HTTPException, on_http)
    return app


JSON = {"content-type": "application/json"}
CASES = [
    ("valid", b'{"name": "a", "count": 2}', JSON),
    ("defaults", b'{"name": "a"}', JSON),
    ("a +json type", b'{"name": "a"}', {"content-type": "application/vnd.api+json; charset=utf-8"}),
    ("empty", b"", JSON),
    ("no content type", b'{"name": "a"}', {}),
    ("text/plain", b'{"name": "a"}', {"content-type": "text/plain"}),
    ("malformed", b'{"name": "a",', JSON),
    ("null", b"null", JSON),
    ("a list", b"[1, 2]", JSON),
    ("missing field", b'{"count": 2}', JSON),
    ("strict int", b'{"name": "a", "count": "2"}', JSON),
    ("bound", b'{"name": "a", "count": -1}', JSON),
    ("nested", b'{"name": "a", "tags": ["x", 3]}', JSON),
    ("undecodable", b'{"name": "\xff\xfe"}', JSON),
]


def _answers(app, body: bytes, headers: dict) -> tuple[int, object]:
    async def send():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://front") as client:
            response = await client.post("/items", content=body, headers=headers)
            return response.status_code, response.json()

    return asyncio.run(send())


@pytest.mark.parametrize(("case", "body", "headers"), CASES, ids=[case[0] for case in CASES])
def test_a_body_reads_as_fastapi_reads_it(case, body, headers):
    expected = _answers(_fastapi_app(), body, headers)
    assert _answers(_operations_app(), body, headers) == expected


def test_the_cases_cover_every_outcome():
    """Each way a body fails is among the cases, so the parity above is checked for every one."""
    answers = [_answers(_fastapi_app(), body, headers) for _, body, headers in CASES]
    assert {status for status, _ in answers} == {200, 400}
    outcomes = {answer.get("type", answer.get("detail")) for status, answer in answers if status == 400}
    assert outcomes >= {
        "missing",  # no body, or a field left out
        "model_attributes_type",  # not declared JSON, or JSON that is not an object
        "json_invalid",
        "int_type",
        "greater_than_equal",
        "string_type",
        "There was an error parsing the body",  # bytes that are not text
    }


@pytest.mark.parametrize(
    ("content_type", "is_json"),
    [
        ("application/json", True),
        ("application/json; charset=utf-8", True),
        ("application/problem+json", True),
        ("application/x-www-form-urlencoded", False),
        ("text/json", False),
        ("", False),
    ],
)
def test_json_content_types(content_type, is_json):
    assert is_json_type(content_type) == is_json
