"""Dynamic batching of embedding requests: wait at most max_wait_ms after the first request, or until
max_batch_tokens are gathered, then run one forward pass over every input of every gathered request."""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass
class PendingEmbedding:
    request_id: str
    reply_to: int
    token_ids: list[list[int]]
    arrived: float = field(default_factory=time.monotonic)

    @property
    def num_tokens(self) -> int:
        return sum(len(ids) for ids in self.token_ids)


class EmbeddingBatcher:
    def __init__(self, max_batch_tokens: int, max_wait_ms: float):
        self.max_batch_tokens = max_batch_tokens
        self.max_wait_s = max_wait_ms / 1000
        self.pending: list[PendingEmbedding] = []

    def add(self, request: PendingEmbedding) -> None:
        self.pending.append(request)

    @property
    def num_pending_tokens(self) -> int:
        return sum(r.num_tokens for r in self.pending)

    def seconds_until_due(self, now: float | None = None) -> float | None:
        """None when nothing waits; 0 when a batch should run now."""
        if not self.pending:
            return None
        if self.num_pending_tokens >= self.max_batch_tokens:
            return 0.0
        now = time.monotonic() if now is None else now
        return max(0.0, self.pending[0].arrived + self.max_wait_s - now)

    def take_batch(self) -> list[PendingEmbedding]:
        """Oldest first, up to max_batch_tokens; a single request larger than the budget still runs alone."""
        batch, total = [], 0
        while self.pending and (not batch or total + self.pending[0].num_tokens <= self.max_batch_tokens):
            request = self.pending.pop(0)
            batch.append(request)
            total += request.num_tokens
        return batch
