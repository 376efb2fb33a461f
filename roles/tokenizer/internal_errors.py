"""A fault no other handler expects: logged with its traceback, answered as a 500 in OpenAI shape whose message
names nothing internal (the log has the detail, the client the request id to find it by)."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from roles.tokenizer.openai_errors import error_body
from roles.tokenizer.request_log import record_of

log = logging.getLogger("roleserve.tokenizer")

INTERNAL_ERROR = "internal_error"


def internal_error_body(request_id: str | None = None) -> dict:
    where = f" (request {request_id}; the server log has the detail)" if request_id else ""
    return error_body(500, f"the server failed to answer this request{where}", code=INTERNAL_ERROR)


def install_internal_error_handler(app: FastAPI) -> None:
    @app.exception_handler(Exception)
    async def _internal(request: Request, error: Exception) -> JSONResponse:
        request_id = record_of(request).request_id
        log.error("request %s failed", request_id or request.url.path, exc_info=error)
        return JSONResponse(internal_error_body(request_id), 500)
