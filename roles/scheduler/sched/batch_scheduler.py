"""Continuous batching: which requests run this step, how many new tokens each, and where their KV goes.

Every step has a token budget (``chunked_prefill_size``). Running requests are served first, oldest
first: a decode costs 1 token, a partially prefilled prompt continues with its next chunk. What is left
of the budget admits waiting requests FCFS (after prefix-cache lookup), bounded by
``max_running_requests`` and by free KV pages in every attention group (``request_pages``). When a running request cannot get a page, the newest
running request is preempted: its pages are released and it goes back to the front of the queue to be
recomputed (its full pages usually survive in the prefix cache, so recompute is mostly cache hits).

A model with longrope scaling (Phi-3) rotates a sequence longer than its original context with the long factors
at every position, as transformers does: a request is marked ``long_rope`` at admission when it is already that
long, and a running one that grows past it is sent back to the front of the queue to be recomputed, its pages
released (the short-factor K are wrong for it now; long-factor pages chain from their own prefix-cache root).

Admission into the queue is bounded too: the scheduler holds at most
``max_running_requests + max_queued_requests`` unfinished requests and ``add`` refuses the next one
(QueueFull), whoever sent it.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field

from roles.scheduler.kv_cache.kv_groups import KVGroup
from roles.scheduler.sched.request import Request, RequestStatus
from roles.scheduler.sched.request_pages import RequestPages


class QueueFull(Exception):
    """The scheduler already holds as many requests as it may; the caller should retry later."""


@dataclass
class ScheduledBatch:
    """Sequence i computes tokens ``[num_computed, num_computed + num_new_tokens[i])`` of ``requests[i]``."""

    requests: list[Request] = field(default_factory=list)
    num_new_tokens: list[int] = field(default_factory=list)

    @property
    def is_empty(self) -> bool:
        return not self.requests

    @property
    def num_tokens(self) -> int:
        return sum(self.num_new_tokens)


class BatchScheduler:
    def __init__(
        self,
        groups: list[KVGroup],
        max_running_requests: int,
        chunked_prefill_size: int,
        max_queued_requests: int,
        long_rope_from: int | None = None,
    ):
        if max_running_requests < 1:
            raise ValueError(f"max_running_requests must be >= 1; got {max_running_requests}")
        if chunked_prefill_size < max_running_requests:
            # Otherwise the newest running requests could be starved of their decode token forever.
            raise ValueError(
                f"chunked_prefill_size must be >= max_running_requests ({max_running_requests}); "
                f"got {chunked_prefill_size}"
            )
        self.pages = RequestPages(groups)
        self.cache = groups[0].cache  # counts prefix hits per request
        self.page_size = groups[0].page_size
        self.max_running_requests = max_running_requests
        self.max_queued_requests = max_queued_requests
        self.chunked_prefill_size = chunked_prefill_size
        self.waiting: deque[Request] = deque()
        self.running: list[Request] = []  # admission order: the last one is the newest
        self.num_preemptions = 0
        # longrope's original context: a sequence longer than this rotates with the long factors (else None)
        self.long_rope_from = long_rope_from
        self.num_long_rope_recomputes = 0

    @property
    def num_unfinished(self) -> int:
        return len(self.running) + len(self.waiting)

    @property
    def is_full(self) -> bool:
        return self.num_unfinished >= self.max_running_requests + self.max_queued_requests

    def add(self, request: Request) -> None:
        if self.is_full:
            raise QueueFull(
                f"the scheduler holds {len(self.running)} running and {len(self.waiting)} waiting requests, "
                f"its limit (schedule.max_running_requests {self.max_running_requests} + "
                f"schedule.max_queued_requests {self.max_queued_requests}); retry later"
            )
        request.status = RequestStatus.WAITING
        self.waiting.append(request)

    def has_unfinished(self) -> bool:
        return bool(self.waiting or self.running)

    # ---- one step -------------------------------------------------------------------------------------
    def schedule(self) -> ScheduledBatch:
        batch = ScheduledBatch()
        budget = self.chunked_prefill_size
        running = self.running
        index = 0
        while index < len(running) and budget > 0:
            request = running[index]
            if self._turns_long_rope(request):
                self._send_back(request)  # recomputed with the long factors, from the queue's head
                self.num_long_rope_recomputes += 1
                continue
            num_new = min(request.num_tokens - request.num_computed_tokens, budget)
            if not self.reserve_pages(request, request.num_computed_tokens + num_new):
                if not self._preempt_until_fits(request, num_new):
                    break  # the request itself was the newest and got preempted
            batch.requests.append(request)
            batch.num_new_tokens.append(num_new)
            budget -= num_new
            index += 1
        while self.waiting and budget > 0 and len(running) < self.max_running_requests:
            num_new = self._admit(self.waiting[0], budget)
            if num_new == 0:
                break  # FCFS: nobody jumps the queue head when it does not fit
            request = self.waiting.popleft()
            request.status = RequestStatus.RUNNING
            if request.queue_time_s is None:
                request.queue_time_s = time.monotonic() - request.arrived_at
            running.append(request)
            batch.requests.append(request)
            batch.num_new_tokens.append(num_new)
            budget -= num_new
        return batch

    def _preempt_until_fits(self, request: Request, num_new: int) -> bool:
        while True:
            victim = self.running[-1]
            self._preempt(victim)
            if victim is request:
                return False
            if self.reserve_pages(request, request.num_computed_tokens + num_new):
                return True

    def _admit(self, request: Request, budget: int) -> int:
        """Match the prefix cache and reserve pages for the first chunk; the chunk length, or 0 if it won't fit."""
        self._turns_long_rope(request)
        # Keep >= 1 token to compute: the step computing the last token is the one that yields logits.
        num_cached = self.pages.match(request, request.num_tokens - 1)
        num_new = min(request.num_tokens - num_cached, budget)
        if not self.pages.reserve(request, num_cached + num_new):
            self.pages.release(request)
            return 0
        request.num_cached_tokens = num_cached
        self.cache.record_query(request.num_tokens, num_cached)
        return num_new

    def reserve_pages(self, request: Request, num_tokens: int) -> bool:
        """Make the request's pages cover ``num_tokens`` tokens; False (and nothing taken) if they can't."""
        return self.pages.reserve(request, num_tokens)

    def _turns_long_rope(self, request: Request) -> bool:
        """Mark the request ``long_rope`` if it has just grown past longrope's original context; True then."""
        if self.long_rope_from is None or request.long_rope or request.num_tokens <= self.long_rope_from:
            return False
        request.long_rope = True
        return True

    def short_rope_room(self, request: Request) -> int:
        """How many positions past its tokens the request may still compute before it turns ``long_rope``
        (a speculative draft stops there); unbounded without longrope."""
        if self.long_rope_from is None or request.long_rope:
            return 1 << 62
        return self.long_rope_from - request.num_tokens

    def _preempt(self, request: Request) -> None:
        self._send_back(request)
        request.num_preemptions += 1
        self.num_preemptions += 1

    def _send_back(self, request: Request) -> None:
        """Release the running request's pages and queue it first, to be recomputed."""
        self.running.remove(request)
        self._release(request)
        request.status = RequestStatus.WAITING
        self.waiting.appendleft(request)

    def _release(self, request: Request) -> None:
        self.pages.release(request)

    # ---- after the model step -------------------------------------------------------------------------
    def on_computed(self, batch: ScheduledBatch) -> None:
        """Advance each scheduled request past its new tokens, publish pages that became full and release
        those behind a window."""
        for request, num_new in zip(batch.requests, batch.num_new_tokens, strict=True):
            self.advance(request, num_new)

    def advance(self, request: Request, num_new: int) -> None:
        """``num_new`` more of the request's tokens have their K/V in its pages (a step computed them, or a
        verification kept them): count them, publish the pages they filled, release those behind a window."""
        request.num_computed_tokens += num_new
        self.pages.advance(request)

    def finish(self, request: Request, reason: str) -> None:
        """Take a request out (done, or aborted while waiting or running) and free its pages now."""
        if request.status is RequestStatus.RUNNING:
            self.running.remove(request)
        elif request.status is RequestStatus.WAITING:
            self.waiting.remove(request)
        self._release(request)
        request.status = RequestStatus.FINISHED
        request.finish_reason = reason
