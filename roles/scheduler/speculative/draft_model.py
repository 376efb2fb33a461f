"""Drafting with a second, small model (exec.speculative_method: draft_model).

The draft model (exec.speculative_draft_model, a model with the served model's tokenizer) runs beside the
served one in the same process and weight format, with a paged KV cache of its own (memory.kv_cache_tokens
tokens, no prefix reuse). Each request that may speculate has a shadow here: the pages of the draft's cache
it holds, and how many of its tokens the draft has computed.

A step's drafts come from a few forwards of the draft model over every drafting request at once:
1. catch up: the tokens the draft has not computed yet (the whole prompt the first time, then what the
   served model emitted since) as one chunk per request, with logits at its last token, which give the
   first drafted token. At most schedule.chunked_prefill_size tokens in all: a request whose catch-up does
   not fit computes part of it and gets no draft this step;
2. then one row per request and drafted token: the previous drafted token in, the next one out.
A drafted token is the draft's argmax for a greedy request, and for a sampled one a draw from the draft's
distribution under the request's own sampling (its q, which verification (verify.py) weighs against the
served model's p, so sampled output keeps the served model's distribution). A request's drafted positions
count as computed once the served model has kept their tokens (the next step compares); a rejected token's
position is written again by the next catch-up. When pages are short, those of requests not drafting this
step go back first; a request holding an id the draft model has no row for (a served vocabulary padded
further) is not drafted for.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from roles.model_files.model_shape import ModelShape
from roles.protocol import SamplingFields
from roles.scheduler.kernels import native
from roles.scheduler.kv_cache.kv_groups import build_kv_groups, kv_cache_of
from roles.scheduler.loading.from_file import load_model
from roles.scheduler.models.block_linear import prepare_kernel_views
from roles.scheduler.sampling.sampler import draw_index, filtered_logits, logits_array, softmax
from roles.scheduler.sched.batch_scheduler import ScheduledBatch
from roles.scheduler.sched.request import Request
from roles.scheduler.sched.request_pages import RequestPages
from roles.scheduler.sched.step_inputs import build_forward_batch
from roles.scheduler.speculative.speculator import Speculator


@dataclasses.dataclass
class _Drafting:
    """One request's drafting in a step: its shadow, the tokens its next forward computes (0: none) and
    how many it may draft (0: it only catches up), the drafted tokens and, when sampled, their
    distributions."""

    request: Request
    shadow: Request
    count: int
    limit: int
    tokens: list[int] = dataclasses.field(default_factory=list)
    probs: list[np.ndarray] = dataclasses.field(default_factory=list)


class DraftModelSpeculator(Speculator):
    DRAFTS_ALONE = False  # one forward drafts for every request

    def __init__(self, config, shape: ModelShape, model_and_shape: tuple | None = None):
        """config: an EngineConfig; its speculative_draft_model is loaded in its weight_dtype unless
        ``model_and_shape`` is given. shape: the served model's (a drafted token must be one of its ids)."""
        super().__init__(config.speculative_num_draft_tokens)
        if model_and_shape is None:
            if not config.speculative_draft_model:
                raise ValueError(
                    "speculative_method draft_model needs speculative_draft_model (a model path)"
                )
            model_and_shape = load_model(config.speculative_draft_model, weight_dtype=config.weight_dtype)
        self.model, self.shape = model_and_shape
        if isinstance(self.model, torch.nn.Module) and native.unavailable_reason() is None:
            prepare_kernel_views(self.model)  # as the engine does for the served model
        self.served_vocab_size = shape.vocab_size
        self.vocab_size = min(shape.vocab_size, self.shape.vocab_size)  # ids both models have
        groups = build_kv_groups(self.shape, dataclasses.replace(config, enable_prefix_cache=False))
        self.kv_cache = kv_cache_of(groups)
        self.pages = RequestPages(groups)
        self.page_size = config.page_size
        self.catch_up_budget = config.chunked_prefill_size
        # A request alone must fit the draft's context and cache with its drafted positions.
        cache_tokens = config.kv_cache_tokens // config.page_size * config.page_size
        self.max_total_tokens = min(self.shape.context_length, cache_tokens)
        self._shadows: dict[str, Request] = {}  # request id -> the draft's view of it, while it runs
        # request id -> the positions its last drafting wrote in the draft's cache, drafted ones included
        self._written: dict[str, int] = {}
        self._never: set[str] = set()  # requests holding an id the draft model has no row for
        # request id -> the distributions its sampled draft of this step was drawn from (verification's q)
        self._drawn_from: dict[str, np.ndarray] = {}

    def _draft(self, wanted: list[tuple[Request, int]]) -> list[list[int]]:
        self._drawn_from.clear()
        taken: list[_Drafting] = []
        budget = self.catch_up_budget
        drafting = {request.request_id for request, _ in wanted}
        for request, limit in wanted:
            taken.append(_Drafting(request, None, 0, 0))  # no draft, unless it gets one below
            limit = min(limit, self.max_total_tokens - request.num_tokens)
            if limit < 1 or request.request_id in self._never:
                self._drop(request.request_id)  # past the draft's context or cache: never again
                continue
            shadow = self._shadow_of(request)
            self._count_kept(shadow, request)
            new_tokens = request.token_ids[shadow.num_computed_tokens :]
            if max(new_tokens) >= self.shape.vocab_size:  # an id the draft model has no row for
                self._never.add(request.request_id)
                self._drop(request.request_id)
                continue
            count = min(len(new_tokens), budget)
            limit = limit if count == len(new_tokens) else 0  # 0: only catches up this step
            if count < 1:
                continue
            # Pages for the positions this step writes: the catch-up's, then the drafted tokens' but the last.
            if not self._reserve(shadow, shadow.num_computed_tokens + count + max(limit - 1, 0), drafting):
                continue
            # Its computed tokens are the request's own: only the ones after them change (no copy of the whole).
            del shadow.token_ids[shadow.num_computed_tokens :]
            shadow.token_ids.extend(new_tokens)
            budget -= count
            taken[-1] = _Drafting(request, shadow, count, limit)
        with torch.inference_mode():
            self._forward([item for item in taken if item.count])
            for round_ in range(1, max(item.limit for item in taken)):
                active = [item for item in taken if item.limit > round_]
                for item in active:
                    item.shadow.token_ids.append(item.tokens[-1])
                    item.count = 1
                self._forward(active)
        for item in taken:
            if not item.count:
                continue
            # Drafted positions count once the served model has kept their tokens (next step, _count_kept).
            self._written[item.request.request_id] = item.shadow.num_computed_tokens
            item.shadow.num_computed_tokens = min(item.shadow.num_computed_tokens, item.request.num_tokens)
            self.pages.advance(item.shadow)  # a windowed group's pages behind its window go back
            if item.tokens and item.request.params.temperature > 0:
                self._drawn_from[item.request.request_id] = np.stack(item.probs)
        return [item.tokens for item in taken]

    def _reserve(self, shadow: Request, num_tokens: int, drafting: set[str]) -> bool:
        """Pages of the draft's cache for the shadow up to num_tokens; when they are short, those of
        requests not drafting this step (waiting, preempted, or decoding one token at a time) go back first,
        their shadows to catch up again from the start when they next draft."""
        idle = [request_id for request_id in self._shadows if request_id not in drafting]
        while not self.pages.reserve(shadow, num_tokens):
            if not idle:
                return False
            self._drop(idle.pop(0))
        return True

    def _count_kept(self, shadow: Request, request: Request) -> None:
        """Count as computed the drafted positions whose tokens the served model kept: their K/V in the
        draft's cache is that of the request's own tokens. The request's last token is always computed
        again (its logits give the next draft)."""
        written = self._written.pop(request.request_id, 0)
        tokens = request.token_ids
        end = len(tokens) - 1  # even when the request has not moved since its last draft (a step retried)
        kept = min(shadow.num_computed_tokens, end)
        end = min(written, end)
        while kept < end and shadow.token_ids[kept] == tokens[kept]:
            kept += 1
        shadow.num_computed_tokens = kept

    def _forward(self, items: list[_Drafting]) -> None:
        """One forward of the draft model computing each item's ``count`` more tokens; the item's next
        drafted token from its last row, over the ids both models have (its argmax, or for a sampled request
        a draw from the request's distribution over the draft's logits), unless the item only catches up."""
        if not items:
            return
        batch = ScheduledBatch([item.shadow for item in items], [item.count for item in items])
        logits = logits_array(self.model.forward(build_forward_batch(batch, self.page_size), self.kv_cache))
        logits = logits[:, : self.vocab_size]  # only ids the served model has are ever drafted
        for item in items:
            item.shadow.num_computed_tokens += item.count
        greedy = logits.argmax(axis=-1).tolist()
        drafting = [i for i, item in enumerate(items) if item.limit]
        sampled = [i for i in drafting if items[i].request.params.temperature > 0]
        if sampled:
            params = [items[i].request.params for i in sampled]
            probs = softmax(filtered_logits(logits[sampled], params))
            for row, i in enumerate(sampled):
                greedy[i] = draw_index(probs[row], items[i].request.generator)
                items[i].probs.append(self._over_served_vocab(probs[row]))
        for i in drafting:
            items[i].tokens.append(greedy[i])

    def _over_served_vocab(self, probs: np.ndarray) -> np.ndarray:
        """A draft distribution as a row over the served model's ids (0 past the draft's)."""
        if probs.shape[0] == self.served_vocab_size:
            return probs
        return np.pad(probs, (0, self.served_vocab_size - probs.shape[0]))

    def _draft_probs(self, request: Request, num_drafted: int) -> np.ndarray | None:
        drawn = self._drawn_from.pop(request.request_id, None)
        return None if drawn is None else drawn[:num_drafted]

    def _shadow_of(self, request: Request) -> Request:
        shadow = self._shadows.get(request.request_id)
        if shadow is None:
            shadow = Request(request.request_id, request.token_ids, SamplingFields(temperature=0))
            shadow.page_ids = [[] for _ in self.pages.groups]
            self._shadows[request.request_id] = shadow
        return shadow

    def forget(self, request_id: str) -> None:
        self._never.discard(request_id)
        self._drop(request_id)

    def _drop(self, request_id: str) -> None:
        """The request's shadow and its pages in the draft's cache go (it catches up anew if it drafts)."""
        self._written.pop(request_id, None)
        shadow = self._shadows.pop(request_id, None)
        if shadow is not None:
            self.pages.release(shadow)
