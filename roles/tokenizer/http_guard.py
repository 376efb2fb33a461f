"""The HTTP guard in front of every route: API key check, body size bound (http.max_request_bytes, 413),
in-flight count (draining waits for it), the request metric (labelled with the route's template, never
the raw path: unknown paths share one label), the request log line (observability.log_requests), and the
500 of a fault no handler expected (internal_errors.py).

A plain ASGI middleware, not Starlette's BaseHTTPMiddleware: that one copies every chunk of a streamed
response through an in-memory stream, which cost more per token than producing the token's SSE event.
A request counts as in flight until its response has been sent whole (streams included).
"""

from __future__ import annotations

import hmac
import time

from roles.tokenizer.front_state import FrontState
from roles.tokenizer.internal_errors import internal_error_response
from roles.tokenizer.openai_errors import OpenAIError, error_response
from roles.tokenizer.request_log import attach_record, log
from roles.tokenizer.web_page import PAGE_PATHS

# Reachable without the API key: load balancers probe /health; the web page holds no data (web_page.py).
OPEN_PATHS = {"/health", "/ready", *PAGE_PATHS}
UNLOGGED_PATHS = {"/health", "/ready", "/metrics"}  # probes and scrapes would drown the request log


UNMATCHED = "unmatched"  # the metric label of every path no route serves


class _BodyTooLarge(BaseException):  # not an Exception: no handler on the way may take it for a bad body
    pass


def _header(scope, wanted: bytes) -> bytes | None:
    """The first value of a header (ASGI gives names lower-cased), or None."""
    return next((value for name, value in scope.get("headers", ()) if name == wanted), None)


def _content_length(scope) -> int | None:
    try:
        return int(_header(scope, b"content-length"))
    except (TypeError, ValueError):  # absent or not a number
        return None


def _bearer_token(scope) -> str:
    given = (_header(scope, b"authorization") or b"").decode("latin-1")
    return given[7:] if given.lower().startswith("bearer ") else ""


class HTTPGuard:
    def __init__(self, app, state: FrontState, router=None):
        """router: the application's, whose route templates label the request metric."""
        self.app = app
        self.state = state
        self.router = router

    def route_label(self, scope) -> str:
        """The template of the route that serves this path ("/admin/expert_distribution/{action}")."""
        from starlette.routing import Match

        for route in getattr(self.router, "routes", ()):
            if route.matches(scope)[0] is Match.FULL:
                return getattr(route, "path", UNMATCHED)
        return UNMATCHED

    def bounded(self, receive):
        """``receive`` that stops a body growing past http.max_request_bytes (chunked bodies included)."""
        limit, seen = self.state.settings.max_request_bytes, 0

        async def receive_bounded():
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise _BodyTooLarge()
            return message

        return receive_bounded

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        state, path = self.state, scope["path"]
        state.num_active_http += 1
        status = 500
        responded = False
        started = time.monotonic()
        record = attach_record(scope)

        async def send_and_note_status(message) -> None:
            nonlocal status, responded
            if message["type"] == "http.response.start":
                status, responded = message["status"], True
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
            limit = state.settings.max_request_bytes
            length = _content_length(scope)
            if length is not None and length > limit:
                await self.too_large(scope, receive, send_and_note_status)
                return
            try:
                await self.app(scope, self.bounded(receive), send_and_note_status)
            except _BodyTooLarge:
                if not responded:
                    await self.too_large(scope, receive, send_and_note_status)
            except Exception as error:  # what no handler expected: logged once, here, with the request id
                response = internal_error_response(record.request_id, path, error)
                if not responded:  # else the response is cut short: the server closes the connection
                    await response(scope, receive, send_and_note_status)
        finally:
            state.num_active_http -= 1
            state.metrics.requests.labels("tokenizer", self.route_label(scope), str(status)).inc()
            if state.settings.log_requests and path not in UNLOGGED_PATHS:
                log.info(record.line(scope["method"], path, status, time.monotonic() - started))

    async def too_large(self, scope, receive, send) -> None:
        limit = self.state.settings.max_request_bytes
        message = f"the request body is larger than http.max_request_bytes={limit}"
        await error_response(OpenAIError(413, message, code="request_too_large"))(scope, receive, send)
