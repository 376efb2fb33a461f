"""Structured output in the engine: a request with a grammar holds an llguidance matcher, and every token it
samples is drawn only from the tokens its grammar allows next.

Per step, the masks of the batch's constrained requests are computed in one worker thread, started
before the forward and collected after it: llguidance releases the GIL, so the masks are made while the
model runs. A mask is a bitmask, one bit per vocabulary entry. After the forward it becomes an additive
bias (0 or -inf per token, looked up 8 tokens per byte in a 256-row table: one gather and one add, where
unpacking bits with tensor ops costs ten times more on a 49k vocabulary) applied before any penalty or
filter. The matcher then takes the sampled token; a grammar that allows nothing more ends its request.

A request's matcher is compiled in another thread from the moment it arrives (``compile``), so the step
loop never waits for it while the prompt is prefilled; the first mask of the request waits for it if it
is not ready by then. The grammar engine needs every token's bytes: its tokenizer is built from the
checkpoint's own on the first constrained request (about half a second for a 49k vocabulary), so servers
that never see one never pay. A grammar the engine refuses ends its request with an error ("error": a 400
for the client), found at its first token.
"""

from __future__ import annotations

import functools
import importlib
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import llguidance

# Row b: the 8 biases of a mask byte b, lowest bit first (0 for an allowed token, -inf otherwise).
_BYTE_BIASES = np.where(
    np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1, bitorder="little") == 1,
    np.float32(0),
    np.float32(-np.inf),
).astype(np.float32)


@functools.cache
def _llguidance():
    """llguidance, imported at the first grammar: a scheduler that never sees one does not pay for the import
    (about 80 ms of its start-up)."""
    return importlib.import_module("llguidance")


@functools.cache
def _limits() -> llguidance.LLParserLimits:
    # Less lexer fuel than llguidance's default (1M): a pathological regex such as (a{1000}){1000} then fails
    # at its first mask after ~70 ms instead of holding the whole batch for over a second; schemas of a
    # thousand properties still fit. Errors name the problem without dumping the parser's state.
    return _llguidance().LLParserLimits(initial_lexer_fuel=100_000, verbose_errors=False)


@dataclass(frozen=True)
class GrammarFailure:
    """What a request holds instead of a matcher when its grammar could not be compiled."""

    message: str


@dataclass
class PendingMasks:
    """Masks being computed for the rows ``batch_rows`` of one batch (row i's words in ``words[i]``)."""

    future: Future
    words: np.ndarray  # (batch size, vocab words) uint32
    batch_rows: list[int]


class TokenConstraints:
    def __init__(self, model_path: str | None, vocab_size: int, eos_token_ids: frozenset[int]):
        self.model_path, self.vocab_size = model_path, vocab_size
        self.eos_token_ids = sorted(eos_token_ids)
        self.num_words = (vocab_size + 31) // 32
        self._tokenizer: llguidance.LLTokenizer | None = None
        self._tokenizer_lock = threading.Lock()
        self._compiler = ThreadPoolExecutor(1, thread_name_prefix="grammar-compile")  # threads start lazily
        self._worker = ThreadPoolExecutor(1, thread_name_prefix="token-masks")

    def _ll_tokenizer(self) -> llguidance.LLTokenizer:
        with self._tokenizer_lock:
            if self._tokenizer is None:
                if self.model_path is None:
                    raise ValueError(
                        "structured output needs the model's tokenizer; this engine has no model path"
                    )
                from roles.model_files.tokenizer_file import load_tokenizer

                try:
                    self._tokenizer = _llguidance().LLTokenizer(
                        load_tokenizer(self.model_path).to_str(),
                        n_vocab=self.vocab_size,
                        eos_token=self.eos_token_ids or None,
                    )
                except ValueError as error:
                    raise ValueError(
                        f"the grammar engine cannot use this model's tokenizer: {error}"
                    ) from None
            return self._tokenizer

    def compile(self, grammar: str) -> Future:
        """Start making one request's matcher off the step loop (a Future of ``matcher(grammar)``)."""
        return self._compiler.submit(self.matcher, grammar)

    def matcher(self, grammar: str) -> llguidance.LLMatcher:
        """A fresh matcher for one request; ValueError if the grammar is unusable."""
        matcher = _llguidance().LLMatcher(self._ll_tokenizer(), grammar, log_level=0, limits=_limits())
        if matcher.is_error():
            raise ValueError(_failure(matcher))
        return matcher

    def start_masks(self, requests: list, sampled_rows: list[int]) -> PendingMasks | None:
        """Begin computing the masks of a batch's constrained rows among those that sample a token this
        step; None when there are none. Each such request's ``matcher`` is settled on the way: a matcher,
        or a GrammarFailure."""
        rows = [i for i in sampled_rows if requests[i].matcher is not None]
        if not rows:
            return None
        words = np.zeros((len(requests), self.num_words), dtype=np.uint32)
        future = self._worker.submit(_fill_masks, [(requests[i], words[i]) for i in rows])
        return PendingMasks(future, words, rows)

    def apply(self, logits: np.ndarray, pending: PendingMasks, sampled_rows: list[int]) -> None:
        """-inf on the logits of disallowed tokens. ``logits`` row j belongs to batch row sampled_rows[j]."""
        pending.future.result()
        position = {batch_row: j for j, batch_row in enumerate(sampled_rows)}
        pairs = [(position[row], row) for row in pending.batch_rows if row in position]
        if not pairs:
            return
        logit_rows = [j for j, _ in pairs]
        mask_bytes = pending.words[[row for _, row in pairs]].view(np.uint8)
        for empty in np.flatnonzero(~mask_bytes.any(axis=1)):  # a matcher in error allows nothing:
            for token in self.eos_token_ids or [0]:  # let it end rather than sample garbage
                mask_bytes[empty, token // 8] |= 1 << (token % 8)
        bias = np.take(_BYTE_BIASES, mask_bytes, axis=0).reshape(len(pairs), -1)
        bias = bias[:, : logits.shape[1]]
        if len(logit_rows) == logits.shape[0]:
            logits += bias
        else:
            logits[logit_rows] += bias


def _fill_masks(rows: list[tuple[object, np.ndarray]]) -> None:
    """In the mask thread: each request's matcher (compiled by now, or waited for), then its mask."""
    for request, words in rows:
        if isinstance(request.matcher, Future):
            # A grammar, or the tokenizer the engine builds for it, that fails is the request's failure,
            # never the scheduler's.
            try:
                request.matcher = request.matcher.result()
            except Exception as error:
                request.matcher = GrammarFailure(str(error))
        if not isinstance(request.matcher, GrammarFailure):  # settled: a matcher
            request.matcher.unsafe_compute_mask_ptr(words.ctypes.data, words.nbytes)
            if request.matcher.is_error():  # a limit reached while working out what may come next
                request.matcher = GrammarFailure(_failure(request.matcher))


def _failure(matcher: llguidance.LLMatcher) -> str:
    return "grammar: " + matcher.get_error().replace("<non-verbose/>", "").strip()


def advance(matcher: llguidance.LLMatcher, token_id: int) -> bool:
    """Feed the sampled token; True when the grammar is complete (nothing but the end may follow).
    ValueError when the matcher fails on it (a limit of the grammar engine reached)."""
    matcher.consume_token(token_id)
    if matcher.is_error():
        raise ValueError(_failure(matcher))
    return matcher.is_stopped()
