"""Speculative decoding in the engine's step: draft for the decoding requests, verify in the same forward.

Before a step's forward, each decoding request that may speculate gets a draft bounded by what is left of
the step's token budget, its max_tokens and its context, and pages for it: from its own prompt + output
(NgramSpeculator, ngram_drafter) or from a small draft model (DraftModelSpeculator, draft_model). The
forward computes its last token and the drafted ones as one-token rows (step_inputs). After it, verify
(verify.py) turns the k + 1 rows of logits into the tokens to emit; the engine emits them one by one through
its usual stop checks and counts the kept drafted tokens as computed (their K/V is right). Rejected
positions are simply not counted: their slots are rewritten when those positions are computed again, and
the prefix cache only ever sees pages of computed tokens.

Requests with penalties, logprobs or structured output decode one token per step: their per-token state
(counts, the grammar's matcher) would have to be advanced along each draft.
"""

from __future__ import annotations

import numpy as np

from roles.scheduler.sampling.sampler import filtered_logits, softmax
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


class Speculator:
    """Drafts for a step's decoding requests (``_draft``, by subclass), their verification and counts."""

    NO_STATS = {
        "num_spec_drafted_tokens": 0,
        "num_spec_accepted_tokens": 0,
        "num_spec_verifications": 0,
        "num_spec_emitted_tokens": 0,
    }

    def __init__(self, num_draft_tokens: int):
        self.num_draft_tokens = num_draft_tokens
        # Since the engine started; acceptance = accepted / drafted, tokens per step = emitted / verifications.
        self.num_drafted_tokens = 0
        self.num_accepted_tokens = 0
        self.num_verifications = 0
        self.num_emitted_tokens = 0

    # True: a request's draft is known as soon as it is asked for (n-grams), so the step's budget pays what
    # was drafted; False: every drafting request's is made together (a draft model), each paying its limit.
    DRAFTS_ALONE = True

    def propose(self, batch: ScheduledBatch, scheduler: BatchScheduler) -> list[list[int]] | None:
        """Per scheduled request its draft ([] for none); None when no request got one."""
        budget = scheduler.chunked_prefill_size - batch.num_tokens
        drafts: list[list[int]] = [[] for _ in batch.requests]
        wanted: list[tuple[int, Request, int]] = []  # (index in the batch, request, most tokens to draft)
        for index, (request, num_new) in enumerate(zip(batch.requests, batch.num_new_tokens, strict=True)):
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
                if limit > 0 and self.DRAFTS_ALONE:
                    (draft,) = self._draft([(request, limit)])
                    budget -= self._keep(drafts, index, request, draft, scheduler)
                elif limit > 0:
                    wanted.append((index, request, limit))
                    budget -= limit
        if wanted:
            proposed = self._draft([(request, limit) for _, request, limit in wanted])
            for (index, request, _), draft in zip(wanted, proposed, strict=True):
                self._keep(drafts, index, request, draft, scheduler)
        return drafts if any(drafts) else None

    @staticmethod
    def _keep(drafts: list[list[int]], index: int, request: Request, draft: list[int], scheduler) -> int:
        """Give the request its draft if pages for the drafted positions are free (a draft never preempts
        anyone); the tokens it got."""
        if draft and scheduler.reserve_pages(request, request.num_tokens + len(draft)):
            drafts[index] = draft
            return len(draft)
        return 0

    def _draft(self, wanted: list[tuple[Request, int]]) -> list[list[int]]:
        """Per (request, limit): at most limit tokens proposed after the request's tokens ([] for none)."""
        raise NotImplementedError

    def verify(self, request: Request, logits: np.ndarray, draft: list[int]) -> list[int]:
        """``logits`` (len(draft) + 1, V) of the request's verification rows -> the tokens to emit."""
        params = request.params
        if params.temperature == 0:
            emitted = accept_greedy(logits, draft)
        else:
            probs = softmax(filtered_logits(logits, [params] * logits.shape[0]))
            emitted = accept_sampled(probs, draft, request.generator, self._draft_probs(request, len(draft)))
        self.num_drafted_tokens += len(draft)
        self.num_accepted_tokens += len(emitted) - 1
        self.num_verifications += 1
        self.num_emitted_tokens += len(emitted)
        return emitted

    def _draft_probs(self, request: Request, num_drafted: int) -> np.ndarray | None:
        """(num_drafted, V): the distributions the request's drafted tokens were drawn from; None: each was
        certain (an n-gram draft, or a greedy one)."""
        return None

    def forget(self, request_id: str) -> None:
        """The request ended: drop what was kept for it."""

    def stats(self) -> dict[str, int]:
        counts = (
            self.num_drafted_tokens,
            self.num_accepted_tokens,
            self.num_verifications,
            self.num_emitted_tokens,
        )
        return dict(zip(self.NO_STATS, counts, strict=True))


class NgramSpeculator(Speculator):
    def __init__(self, num_draft_tokens: int, ngram_min: int, ngram_max: int):
        NgramIndex(ngram_min, ngram_max)  # checks the sizes once, at build time
        super().__init__(num_draft_tokens)
        self.ngram_min, self.ngram_max = ngram_min, ngram_max
        self._indexes: dict[str, NgramIndex] = {}  # request id -> its n-gram index, while it runs

    def _draft(self, wanted: list[tuple[Request, int]]) -> list[list[int]]:
        return [self._index_of(request).propose(request.token_ids, limit) for request, limit in wanted]

    def forget(self, request_id: str) -> None:
        self._indexes.pop(request_id, None)

    def _index_of(self, request: Request) -> NgramIndex:
        index = self._indexes.get(request.request_id)
        if index is None:
            index = self._indexes[request.request_id] = NgramIndex(self.ngram_min, self.ngram_max)
        return index
