"""Errors in the OpenAI shape: {"error": {"message", "type", "param", "code"}} with the right status."""

from __future__ import annotations

import math

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

_TYPES = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    404: "invalid_request_error",
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


def error_body(status: int, message: str, param: str | None = None, code: str | None = None) -> dict:
    return {
        "error": {
            "message": message,
            "type": _TYPES.get(status, "server_error"),
            "param": param,
            "code": code,
        }
    }


def error_response(error: OpenAIError) -> JSONResponse:
    headers = {}
    if error.status == 401:
        headers["WWW-Authenticate"] = "Bearer"
    if error.retry_after_s is not None:
        headers["Retry-After"] = str(max(1, math.ceil(error.retry_after_s)))
    return JSONResponse(
        error_body(error.status, error.message, error.param, error.code), error.status, headers
    )


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(OpenAIError)
    async def _openai(request: Request, error: OpenAIError) -> JSONResponse:
        return error_response(error)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, error: RequestValidationError) -> JSONResponse:
        first = error.errors()[0] if error.errors() else {}
        location = [str(part) for part in first.get("loc", ()) if part != "body"]
        param = ".".join(location) or None
        message = first.get("msg", "invalid request")
        if param:
            message = f"{param}: {message}"
        return JSONResponse(error_body(400, message, param, "invalid_value"), 400)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, error: StarletteHTTPException) -> JSONResponse:
        return JSONResponse(error_body(error.status_code, str(error.detail)), error.status_code)
