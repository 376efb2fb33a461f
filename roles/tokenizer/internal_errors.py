"""A fault no other handler expects: logged once with its traceback and the request id, answered as a 500 in
OpenAI shape whose message names nothing internal (the log has the detail, the client the request id to
find it by). The HTTP guard (http_guard.py) catches it, not a Starlette exception handler: Starlette
re-raises after such a handler answers, and the server would log the traceback a second time."""

from __future__ import annotations

import logging

from starlette.responses import JSONResponse

from roles.tokenizer.openai_errors import error_body

log = logging.getLogger("roleserve.tokenizer")

INTERNAL_ERROR = "internal_error"


def internal_error_body(request_id: str | None = None) -> dict:
    where = f" (request {request_id}; the server log has the detail)" if request_id else ""
    return error_body(500, f"the server failed to answer this request{where}", code=INTERNAL_ERROR)


def internal_error_response(request_id: str | None, path: str, error: Exception) -> JSONResponse:
    """Log ``error`` with its traceback; the 500 to answer with."""
    log.error("request %s failed", request_id or path, exc_info=error)
    return JSONResponse(internal_error_body(request_id), 500)
