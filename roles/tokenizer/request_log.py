"""observability.log_requests: one line per finished HTTP request, written when its response is sent whole.

The line holds the response id, endpoint, status, prompt and completion token counts, finish reason and
latency; never the prompt, the output or any header (the API key travels in one).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

log = logging.getLogger("roleserve.requests")

_SCOPE_KEY = "roleserve.request_record"


@dataclass
class RequestRecord:
    """Filled in by the route that serves the request; the HTTP guard writes the line."""

    request_id: str = "-"  # the response's id (cmpl-..., chatcmpl-...) once the route has given one
    num_prompt_tokens: int = 0
    num_completion_tokens: int = 0
    finish_reasons: list[str | None] = field(default_factory=list)  # one per choice

    def note_results(self, num_completion_tokens: int, finish_reasons: list[str | None]) -> None:
        self.num_completion_tokens = num_completion_tokens
        self.finish_reasons = finish_reasons

    def line(self, method: str, path: str, status: int, latency_s: float) -> str:
        reasons = ",".join(reason or "none" for reason in self.finish_reasons) or "-"
        return (
            f"request {self.request_id} {method} {path} status={status} prompt_tokens={self.num_prompt_tokens} "
            f"completion_tokens={self.num_completion_tokens} finish_reason={reasons} "
            f"latency_ms={latency_s * 1000:.1f}"
        )


def attach_record(scope) -> RequestRecord:
    record = RequestRecord()
    scope[_SCOPE_KEY] = record
    return record


def record_of(request) -> RequestRecord:
    """The record of a Starlette request (a fresh one when no guard attached it, e.g. in a bare app)."""
    record = request.scope.get(_SCOPE_KEY)
    return record if record is not None else attach_record(request.scope)
