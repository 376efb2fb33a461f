"""Structured output in the engine: a request with a grammar holds an llguidance matcher, and every token it
samples is drawn only from the tokens its grammar allows next.

Per step, the masks of the batch's constrained requests are computed by llguidance's executor in one
worker thread, started before the forward and collected after it: the executor releases the GIL, so the
masks cost nothing while the model runs. A mask is a bitmask, one bit per vocabulary entry; after the
forward, disallowed logits become -inf before any penalty or filter. The matcher then takes the sampled
token; a grammar that allows nothing more ends its request ("stop").

The grammar engine needs every token's bytes: its tokenizer is built from the checkpoint's own on the first
constrained request (about half a second for a 49k vocabulary), so servers that never see one never pay.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import llguidance
import torch

_BITS = torch.arange(32, dtype=torch.int32)


@dataclass
class PendingMasks:
    """Masks being computed for the rows ``batch_rows`` of one batch (row i's words in ``words[i]``)."""

    future: Future
    words: torch.Tensor  # (batch size, vocab words) int32
    batch_rows: list[int]


class TokenConstraints:
    def __init__(self, model_path: str | None, vocab_size: int, eos_token_ids: frozenset[int]):
        self.model_path, self.vocab_size = model_path, vocab_size
        self.eos_token_ids = sorted(eos_token_ids)
        self.num_words = (vocab_size + 31) // 32
        self._tokenizer: llguidance.LLTokenizer | None = None
        self._tokenizer_lock = threading.Lock()
        self._executor: llguidance.LLExecutor | None = None
        self._worker: ThreadPoolExecutor | None = None

    def _ll_tokenizer(self) -> llguidance.LLTokenizer:
        with self._tokenizer_lock:
            if self._tokenizer is None:
                if self.model_path is None:
                    raise ValueError(
                        "structured output needs the model's tokenizer; this engine has no model path"
                    )
                from roles.model_files.tokenizer_file import load_tokenizer

                try:
                    self._tokenizer = llguidance.LLTokenizer(
                        load_tokenizer(self.model_path).to_str(),
                        n_vocab=self.vocab_size,
                        eos_token=self.eos_token_ids or None,
                    )
                except ValueError as error:
                    raise ValueError(
                        f"the grammar engine cannot use this model's tokenizer: {error}"
                    ) from None
                self._executor = llguidance.LLExecutor(num_threads=1)  # the forward has the cores
                self._worker = ThreadPoolExecutor(1, thread_name_prefix="token-masks")
            return self._tokenizer

    def matcher(self, grammar: str) -> llguidance.LLMatcher:
        """A fresh matcher for one request; ValueError (the request is refused) if the grammar is unusable."""
        matcher = llguidance.LLMatcher(self._ll_tokenizer(), grammar, log_level=0)
        if matcher.is_error():
            raise ValueError(f"grammar: {matcher.get_error()}")
        return matcher

    def start_masks(self, matchers: list[llguidance.LLMatcher | None]) -> PendingMasks | None:
        """Begin computing the masks of a batch's rows (None: a free row); None when no row is constrained."""
        rows = [i for i, matcher in enumerate(matchers) if matcher is not None]
        if not rows:
            return None
        words = torch.zeros((len(matchers), self.num_words), dtype=torch.int32)
        future = self._worker.submit(
            self._executor.unsafe_compute_mask_ptr,
            [(matchers[i], i) for i in rows],
            words.data_ptr(),
            self.num_words * 4,
            len(matchers),
        )
        return PendingMasks(future, words, rows)

    def apply(self, logits: torch.Tensor, pending: PendingMasks, sampled_rows: list[int]) -> None:
        """-inf on the logits of disallowed tokens. ``logits`` row j belongs to batch row sampled_rows[j]."""
        pending.future.result()
        position = {batch_row: j for j, batch_row in enumerate(sampled_rows)}
        pairs = [(position[row], row) for row in pending.batch_rows if row in position]
        if not pairs:
            return
        logit_rows = [j for j, _ in pairs]
        words = pending.words[[row for _, row in pairs]]
        allowed = ((words.unsqueeze(-1) >> _BITS) & 1).view(len(pairs), -1)[:, : logits.shape[1]].bool()
        nothing = ~allowed.any(dim=1)
        if bool(nothing.any()):  # a matcher in error allows nothing: let it end rather than sample garbage
            ends = torch.tensor(self.eos_token_ids or [0])
            allowed[nothing.nonzero(), ends] = True
        logits[logit_rows] = logits[logit_rows].masked_fill(~allowed, float("-inf"))


def advance(matcher: llguidance.LLMatcher, token_id: int) -> bool:
    """Feed the sampled token; True when the grammar is complete (nothing but the end may follow)."""
    matcher.consume_token(token_id)
    return matcher.is_stopped() or matcher.is_error()
