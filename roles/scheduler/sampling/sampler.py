"""Next-token choice for a whole batch in one set of array ops (numpy: the engine's step needs no torch).

Order per row: penalties -> (logprobs taken here) -> temperature -> top_k -> min_p -> top_p -> draw.
Each filter runs only on the rows that asked for it. Drawing is inverse-CDF: one uniform u per row and the
first token whose cumulative probability reaches u (one softmax + cumsum + search per row; far cheaper than
Gumbel noise over the whole vocabulary). A seeded row draws its u from its own generator
(``Request.generator``), so its samples do not depend on what else shares the batch; unseeded rows share
one draw from the process's stream of unseeded draws (``UNSEEDED``). Greedy rows (temperature 0) take the argmax and draw nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from roles.protocol import SamplingFields
from roles.scheduler.sampling.penalties import apply_penalties
from roles.scheduler.sched.request import Request

# The draws of every request without a seed of its own (the sampler's, draft verification's, a draft model's).
UNSEEDED = np.random.default_rng()


@dataclass
class SampleOutput:
    token_ids: list[int]  # (B,)
    # Per row, None unless that request set params.logprobs: logprob of the sampled token and the top-N
    # [(token id, logprob)], highest first, both from the post-penalty, pre-temperature distribution.
    logprobs: list[tuple[float, list[tuple[int, float]]] | None]


class Sampler:
    def sample(self, logits: np.ndarray, requests: list[Request]) -> SampleOutput:
        """``logits`` (B, V) float32 rows in the order of ``requests``; modified in place."""
        params = [request.params for request in requests]
        penalty_rows = [i for i, p in enumerate(params) if p.has_penalties]
        if penalty_rows:
            apply_penalties(logits, [requests[i] for i in penalty_rows], penalty_rows)

        greedy_rows = [p.temperature == 0 for p in params]
        if all(greedy_rows):
            token_ids = logits.argmax(axis=-1)
        else:
            token_ids = self._draw(logits, requests, greedy_rows)

        logprob_rows = [i for i, p in enumerate(params) if p.logprobs is not None]
        logprobs: list = [None] * len(requests)
        if logprob_rows:
            for row, entry in zip(
                logprob_rows, _logprobs(logits, logprob_rows, params, token_ids), strict=True
            ):
                logprobs[row] = entry
        return SampleOutput(token_ids=token_ids.tolist(), logprobs=logprobs)

    def _draw(self, logits: np.ndarray, requests: list[Request], greedy_rows: list[bool]) -> np.ndarray:
        rows = [i for i, is_greedy in enumerate(greedy_rows) if not is_greedy]
        greedy_indices = [i for i, is_greedy in enumerate(greedy_rows) if is_greedy]
        subset = [requests[i] for i in rows]
        params = [request.params for request in subset]
        scaled = filtered_logits(logits if len(rows) == len(requests) else logits[rows], params)

        # Inverse CDF: one uniform per row, in (0, 1] so the chosen entry always has positive mass.
        uniforms = 1.0 - UNSEEDED.random(len(rows))
        for i, request in enumerate(subset):
            if request.generator is not None:
                # One draw from the request's own generator: the same in any batch size or row position.
                uniforms[i] = 1.0 - request.generator.random()
        cdf = np.cumsum(softmax(scaled), axis=-1)
        last = logits.shape[1] - 1
        sampled = [
            min(int(np.searchsorted(cdf[j], uniforms[j] * cdf[j, -1])), last) for j in range(len(rows))
        ]
        token_ids = np.empty(len(requests), dtype=np.int64)
        token_ids[rows] = sampled
        if greedy_indices:
            token_ids[greedy_indices] = logits[greedy_indices].argmax(axis=-1)
        return token_ids


def logits_array(logits) -> np.ndarray:
    """A model's logits as the float32 array the sampler takes: a torch model's tensor is viewed, not copied."""
    return logits if isinstance(logits, np.ndarray) else logits.numpy()


def softmax(logits: np.ndarray) -> np.ndarray:
    """Row-wise softmax of (R, V) float32 logits (-inf entries get probability 0)."""
    shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
    shifted /= shifted.sum(axis=-1, keepdims=True)
    return shifted


def log_softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def draw_index(weights: np.ndarray, generator: np.random.Generator | None) -> int:
    """One index drawn from non-negative (V,) weights, in proportion to them (a zero weight is never drawn),
    from ``generator`` (a seeded request's own) or UNSEEDED."""
    cdf = np.cumsum(weights, dtype=np.float64)
    target = (UNSEEDED if generator is None else generator).random() * cdf[-1]
    return min(int(np.searchsorted(cdf, target, side="right")), len(weights) - 1)


def filtered_logits(logits: np.ndarray, params: list[SamplingFields]) -> np.ndarray:
    """(R, V) logits of sampled rows (temperature > 0) -> temperature-scaled, top_k, min_p and top_p
    applied (dropped tokens at -inf): the distribution a row draws from is their softmax. A new array."""
    temperatures = np.array([p.temperature for p in params], dtype=logits.dtype)
    scaled = logits / temperatures[:, None]
    for i, p in enumerate(params):
        if 0 < p.top_k < logits.shape[1]:
            _keep_top_k(scaled[i], p.top_k)
    filter_rows = [i for i, p in enumerate(params) if p.min_p > 0 or p.top_p < 1]
    if filter_rows:
        scaled[filter_rows] = _keep_nucleus(
            scaled[filter_rows],
            [params[i].min_p for i in filter_rows],
            [params[i].top_p for i in filter_rows],
        )
    return scaled


def _keep_top_k(row: np.ndarray, k: int) -> None:
    """In place on a (V,) row: everything below its k-th largest logit becomes -inf (ties at the k-th are
    kept)."""
    kth = np.partition(row, row.shape[0] - k)[row.shape[0] - k]
    row[row < kth] = -np.inf


def _keep_nucleus(scaled: np.ndarray, min_ps: list[float], top_ps: list[float]) -> np.ndarray:
    """(R, V): min_p drops tokens with prob < min_p * max prob; top_p keeps the smallest set of most likely
    tokens whose mass reaches top_p (the most likely token always survives)."""
    probs = softmax(scaled)
    if any(m > 0 for m in min_ps):
        threshold = probs.max(axis=-1, keepdims=True) * np.array(min_ps, dtype=probs.dtype)[:, None]
        scaled = np.where(probs < threshold, -np.inf, scaled).astype(scaled.dtype)
        probs = softmax(scaled)
    if any(p < 1 for p in top_ps):
        scaled = np.where(_nucleus_mask(probs, np.array(top_ps)), scaled, -np.inf).astype(scaled.dtype)
    return scaled


# A full vocabulary sort costs tens of ms on 32 x 49152; a partition to a few hundred candidates is usually
# enough.
_NUCLEUS_CANDIDATES = (256, 4096)


def _nucleus_mask(probs: np.ndarray, top_ps: np.ndarray) -> np.ndarray:
    """(R, V) bool, True for kept tokens: those whose higher-ranked mass is still below their row's top_p
    (``top_ps`` (R,)).

    Tries the top candidates first: when their mass reaches top_p, every token outside them has at least
    that much mass ranked above it and is dropped either way. A row that needs more goes to the next size,
    the last being a full sort.
    """
    keep = np.zeros(probs.shape, dtype=bool)
    vocab_size = probs.shape[1]
    for row, top_p in enumerate(top_ps.reshape(-1).tolist()):
        p = probs[row]
        for num_candidates in (*_NUCLEUS_CANDIDATES, vocab_size):
            num_candidates = min(num_candidates, vocab_size)
            candidates = (
                np.arange(vocab_size)
                if num_candidates == vocab_size
                else np.argpartition(p, vocab_size - num_candidates)[vocab_size - num_candidates :]
            )
            order = candidates[np.argsort(-p[candidates], kind="stable")]
            top_probs = p[order]
            mass = np.cumsum(top_probs)
            keep[row, order] = (mass - top_probs) < top_p
            if num_candidates == vocab_size or mass[-1] >= top_p:
                break
    return keep


def _logprobs(
    logits: np.ndarray, rows: list[int], params: list, token_ids: np.ndarray
) -> list[tuple[float, list[tuple[int, float]]]]:
    log_probs = log_softmax(logits[rows])
    sampled = log_probs[np.arange(len(rows)), token_ids[rows]].tolist()
    entries = []
    for j, row in enumerate(rows):
        n = params[row].logprobs
        top: list[tuple[int, float]] = []
        if n:
            values = log_probs[j]
            ids = np.argpartition(values, values.shape[0] - n)[values.shape[0] - n :]
            ids = ids[np.argsort(-values[ids], kind="stable")]
            top = list(zip(ids.tolist(), values[ids].tolist(), strict=True))
        entries.append((sampled[j], top))
    return entries
