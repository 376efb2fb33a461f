"""Errors in the OpenAI shape: {"error": {"message", "type", "param", "code"}} with the right status."""

from __future__ import annotations

import math
from typing import Literal

from starlette.applications import Starlette
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse

from roles.tokenizer.lazy_model import LazyModel
from roles.tokenizer.request_body import BodyProblem

ErrorType = Literal["invalid_request_error", "rate_limit_error", "server_error"]

_TYPES: dict[int, ErrorType] = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    404: "invalid_request_error",
    405: "invalid_request_error",
    413: "invalid_request_error",
    429: "rate_limit_error",
    503: "server_error",
}


class OpenAIError(Exception):
    def __init__(
        self,
        status: int,
        message: str,
        param: str | None = None,
        code: str | None = None,
        retry_after_s: float | None = None,  # sent as Retry-After (whole seconds, at least 1)
    ):
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.code = code
        self.retry_after_s = retry_after_s


class OpenAIErrorDetail(LazyModel):
    message: str
    type: ErrorType  # by status: server_error unless listed in _TYPES
    param: str | None  # the request field at fault, when one is
    code: str | None  # machine-readable: model_not_found, invalid_value, server_overloaded, ...


class OpenAIErrorBody(LazyModel):
    """The body of every error answer (and of a stream's error event); the OpenAPI spec declares it."""

    error: OpenAIErrorDetail


def error_body(status: int, message: str, param: str | None = None, code: str | None = None) -> dict:
    detail = OpenAIErrorDetail(
        message=message, type=_TYPES.get(status, "server_error"), param=param, code=code
    )
    return OpenAIErrorBody(error=detail).model_dump()


def error_response(error: OpenAIError) -> JSONResponse:
    headers = {}
    if error.status == 401:
        headers["WWW-Authenticate"] = "Bearer"
    if error.retry_after_s is not None:
        headers["Retry-After"] = str(max(1, math.ceil(error.retry_after_s)))
    return JSONResponse(
        error_body(error.status, error.message, error.param, error.code), error.status, headers
    )


def install_error_handlers(app: Starlette) -> None:
    async def _openai(request: Request, error: OpenAIError) -> JSONResponse:
        return error_response(error)

    async def _validation(request: Request, error: BodyProblem) -> JSONResponse:
        first = error.errors[0] if error.errors else {}
        location = [str(part) for part in first.get("loc", ()) if part != "body"]
        param = ".".join(location) or None
        message = first.get("msg", "invalid request")
        if param:
            message = f"{param}: {message}"
        return JSONResponse(error_body(400, message, param, "invalid_value"), 400)

    async def _http(request: Request, error: StarletteHTTPException) -> JSONResponse:
        # The router's own answers: 404 for an unknown path, 405 with the route's methods in Allow.
        body = error_body(error.status_code, str(error.detail))
        return JSONResponse(body, error.status_code, headers=error.headers)

    app.add_exception_handler(OpenAIError, _openai)
    app.add_exception_handler(BodyProblem, _validation)
    app.add_exception_handler(StarletteHTTPException, _http)
