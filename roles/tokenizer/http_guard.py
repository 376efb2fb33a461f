"""The HTTP guard in front of every route: API key check, in-flight count (draining waits for it), the
request metric, and the request log line (observability.log_requests).

A plain ASGI middleware, not Starlette's BaseHTTPMiddleware: that one copies every chunk of a streamed
response through an in-memory stream, which cost more per token than producing the token's SSE event.
A request counts as in flight until its response has been sent whole (streams included).
"""

from __future__ import annotations

import hmac
import time

from roles.tokenizer.front_state import FrontState
from roles.tokenizer.openai_errors import OpenAIError, error_response
from roles.tokenizer.request_log import attach_record, log

OPEN_PATHS = {"/health"}  # reachable without the API key (load balancers probe it)
UNLOGGED_PATHS = {"/health", "/metrics"}  # probes and scrapes would drown the request log


def _bearer_token(scope) -> str:
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            given = value.decode("latin-1")
            return given[7:] if given.lower().startswith("bearer ") else ""
    return ""


class HTTPGuard:
    def __init__(self, app, state: FrontState):
        self.app = app
        self.state = state

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        state, path = self.state, scope["path"]
        state.num_active_http += 1
        status = 500
        started = time.monotonic()
        record = attach_record(scope)

        async def send_and_note_status(message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            key = state.settings.api_key
            if key is not None and path not in OPEN_PATHS:
                token = _bearer_token(scope)
                if not hmac.compare_digest(token.encode(), key.encode()):
                    message = (
                        "Incorrect API key provided"
                        if token
                        else "Missing API key (Authorization: Bearer ...)"
                    )
                    response = error_response(OpenAIError(401, message, code="invalid_api_key"))
                    await response(scope, receive, send_and_note_status)
                    return
            await self.app(scope, receive, send_and_note_status)
        finally:
            state.num_active_http -= 1
            state.metrics.requests.inc("tokenizer", path, str(status))
            if state.settings.log_requests and path not in UNLOGGED_PATHS:
                log.info(record.line(scope["method"], path, status, time.monotonic() - started))
