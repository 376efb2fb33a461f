"""Speculative decoding in the engine's step: draft for the decoding requests, verify in the same forward.

Before a step's forward, each decoding request that may speculate gets an n-gram draft (ngram_drafter)
bounded by what is left of the step's token budget, its max_tokens and its context, and pages for it. The
forward computes its last token and the drafted ones as one-token rows (step_inputs). After it, verify
(verify.py) turns the k + 1 rows of logits into the tokens to emit; the engine emits them one by one through
its usual stop checks and counts the kept drafted tokens as computed (their K/V is right). Rejected
positions are simply not counted: their slots are rewritten when those positions are computed again, and
the prefix cache only ever sees pages of computed tokens.

Requests with penalties, logprobs or structured output decode one token per step: their per-token state
(counts, the grammar's matcher) would have to be advanced along each draft.
"""

from __future__ import annotations

import torch

from roles.scheduler.sampling.sampler import filtered_logits
from roles.scheduler.sched.batch_scheduler import BatchScheduler, ScheduledBatch
from roles.scheduler.sched.request import Request
from roles.scheduler.speculative.ngram_drafter import NgramIndex
from roles.scheduler.speculative.verify import accept_greedy, accept_sampled


def may_speculate(request: Request) -> bool:
    params = request.params
    return request.matcher is None and not params.has_penalties and params.logprobs is None


def first_logit_rows(drafts: list[list[int]]) -> list[int]:
    """Per scheduled request, its first row of the step's logits: one row each, k + 1 for a draft of k."""
    starts, row = [], 0
    for draft in drafts:
        starts.append(row)
        row += len(draft) + 1
    return starts


class NgramSpeculator:
    NO_STATS = {
        "num_spec_drafted_tokens": 0,
        "num_spec_accepted_tokens": 0,
        "num_spec_verifications": 0,
        "num_spec_emitted_tokens": 0,
    }

    def __init__(self, num_draft_tokens: int, ngram_min: int, ngram_max: int):
        NgramIndex(ngram_min, ngram_max)  # checks the sizes once, at build time
        self.num_draft_tokens = num_draft_tokens
        self.ngram_min, self.ngram_max = ngram_min, ngram_max
        self._indexes: dict[str, NgramIndex] = {}  # request id -> its n-gram index, while it runs
        # Since the engine started; acceptance = accepted / drafted, tokens per step = emitted / verifications.
        self.num_drafted_tokens = 0
        self.num_accepted_tokens = 0
        self.num_verifications = 0
        self.num_emitted_tokens = 0

    def propose(self, batch: ScheduledBatch, scheduler: BatchScheduler) -> list[list[int]] | None:
        """Per scheduled request its draft ([] for none); None when no request got one."""
        budget = scheduler.chunked_prefill_size - batch.num_tokens
        drafts: list[list[int]] = []
        for request, num_new in zip(batch.requests, batch.num_new_tokens, strict=True):
            draft: list[int] = []
            is_decoding = num_new == 1 and request.num_computed_tokens == request.num_tokens - 1
            if budget > 0 and is_decoding and may_speculate(request):
                # Every drafted token kept still leaves room for the target's own next one.
                limit = min(
                    self.num_draft_tokens,
                    budget,
                    request.params.max_tokens - request.num_output_tokens - 1,
                    request.max_total_tokens - request.num_tokens - 1,
                    scheduler.short_rope_room(request),
                )
                if limit > 0:
                    draft = self._index_of(request).propose(request.token_ids, limit)
                # Pages for the drafted positions, if free: a draft never preempts anyone.
                if draft and not scheduler.reserve_pages(request, request.num_tokens + len(draft)):
                    draft = []
                budget -= len(draft)
            drafts.append(draft)
        return drafts if any(drafts) else None

    def verify(self, request: Request, logits: torch.Tensor, draft: list[int]) -> list[int]:
        """``logits`` (len(draft) + 1, V) of the request's verification rows -> the tokens to emit."""
        params = request.params
        if params.temperature == 0:
            emitted = accept_greedy(logits, draft)
        else:
            probs = filtered_logits(logits, [params] * logits.shape[0]).softmax(dim=-1)
            emitted = accept_sampled(probs, draft, request.generator)
        self.num_drafted_tokens += len(draft)
        self.num_accepted_tokens += len(emitted) - 1
        self.num_verifications += 1
        self.num_emitted_tokens += len(emitted)
        return emitted

    def forget(self, request_id: str) -> None:
        self._indexes.pop(request_id, None)

    def _index_of(self, request: Request) -> NgramIndex:
        index = self._indexes.get(request.request_id)
        if index is None:
            index = self._indexes[request.request_id] = NgramIndex(self.ngram_min, self.ngram_max)
        return index

    def stats(self) -> dict[str, int]:
        counts = (
            self.num_drafted_tokens,
            self.num_accepted_tokens,
            self.num_verifications,
            self.num_emitted_tokens,
        )
        return dict(zip(self.NO_STATS, counts, strict=True))
