"""Next-token choice for a whole batch in one set of tensor ops.

Order per row: penalties -> (logprobs taken here) -> temperature -> top_k -> min_p -> top_p -> draw.
Each filter runs only on the rows that asked for it. Drawing is inverse-CDF: one uniform u per row and the
first token whose cumulative probability reaches u (one softmax + cumsum + searchsorted for the batch; far
cheaper than Gumbel noise over the whole vocabulary). A seeded row draws its u from its own
``torch.Generator``, so its samples do not depend on what else shares the batch; unseeded rows share one
draw from torch's global generator. Greedy rows (temperature 0) take the argmax and draw nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from roles.protocol import SamplingFields
from roles.scheduler.sampling.penalties import apply_penalties
from roles.scheduler.sched.request import Request


@dataclass
class SampleOutput:
    token_ids: list[int]  # (B,)
    # Per row, None unless that request set params.logprobs: logprob of the sampled token and the top-N
    # [(token id, logprob)], highest first, both from the post-penalty, pre-temperature distribution.
    logprobs: list[tuple[float, list[tuple[int, float]]] | None]


class Sampler:
    def sample(self, logits: torch.Tensor, requests: list[Request]) -> SampleOutput:
        """``logits`` (B, V) float32 rows in the order of ``requests``; modified in place."""
        params = [request.params for request in requests]
        penalty_rows = [i for i, p in enumerate(params) if p.has_penalties]
        if penalty_rows:
            apply_penalties(logits, [requests[i] for i in penalty_rows], penalty_rows)

        greedy_rows = [p.temperature == 0 for p in params]
        if all(greedy_rows):
            token_ids = logits.argmax(dim=-1)
        else:
            token_ids = self._draw(logits, requests, greedy_rows)

        logprob_rows = [i for i, p in enumerate(params) if p.logprobs is not None]
        token_list = token_ids.tolist()
        logprobs: list = [None] * len(requests)
        if logprob_rows:
            for row, entry in zip(
                logprob_rows, _logprobs(logits, logprob_rows, params, token_ids), strict=True
            ):
                logprobs[row] = entry
        return SampleOutput(token_ids=token_list, logprobs=logprobs)

    def _draw(self, logits: torch.Tensor, requests: list[Request], greedy_rows: list[bool]) -> torch.Tensor:
        rows = [i for i, is_greedy in enumerate(greedy_rows) if not is_greedy]
        greedy_indices = [i for i, is_greedy in enumerate(greedy_rows) if is_greedy]
        subset = [requests[i] for i in rows]
        params = [request.params for request in subset]
        scaled = filtered_logits(logits if len(rows) == len(requests) else logits[rows], params)

        # Inverse CDF: one uniform per row, in (0, 1] so the chosen entry always has positive mass.
        uniforms = 1.0 - torch.rand(len(rows))
        for i, request in enumerate(subset):
            if request.generator is not None:
                # One draw from the request's own generator: the same in any batch size or row position.
                uniforms[i] = 1.0 - torch.rand(1, generator=request.generator)
        cdf = scaled.softmax(dim=-1).cumsum_(dim=-1)
        targets = (uniforms * cdf[:, -1]).unsqueeze(1)
        sampled = torch.searchsorted(cdf, targets).squeeze(1).clamp_(max=logits.shape[1] - 1)
        if not greedy_indices:
            return sampled
        token_ids = torch.empty(len(requests), dtype=torch.int64)
        token_ids[rows] = sampled
        token_ids[greedy_indices] = logits[greedy_indices].argmax(dim=-1)
        return token_ids


def filtered_logits(logits: torch.Tensor, params: list[SamplingFields]) -> torch.Tensor:
    """(R, V) logits of sampled rows (temperature > 0) -> temperature-scaled, top_k, min_p and top_p
    applied (dropped tokens at -inf): the distribution a row draws from is their softmax."""
    temperatures = torch.tensor([p.temperature for p in params], dtype=logits.dtype)
    scaled = logits / temperatures.unsqueeze(1)
    top_k_rows = [i for i, p in enumerate(params) if 0 < p.top_k < logits.shape[1]]
    if top_k_rows:
        ks = [params[i].top_k for i in top_k_rows]
        scaled[top_k_rows] = _keep_top_k(scaled[top_k_rows], ks)
    filter_rows = [i for i, p in enumerate(params) if p.min_p > 0 or p.top_p < 1]
    if filter_rows:
        scaled[filter_rows] = _keep_nucleus(
            scaled[filter_rows],
            [params[i].min_p for i in filter_rows],
            [params[i].top_p for i in filter_rows],
        )
    return scaled


def _keep_top_k(scaled: torch.Tensor, ks: list[int]) -> torch.Tensor:
    """(R, V): everything below each row's k-th largest logit becomes -inf (ties at the k-th are kept)."""
    top_values = scaled.topk(max(ks), dim=-1).values
    kth = top_values.gather(1, torch.tensor(ks).unsqueeze(1) - 1)
    return scaled.masked_fill(scaled < kth, float("-inf"))


def _keep_nucleus(scaled: torch.Tensor, min_ps: list[float], top_ps: list[float]) -> torch.Tensor:
    """(R, V): min_p drops tokens with prob < min_p * max prob; top_p keeps the smallest set of most likely
    tokens whose mass reaches top_p (the most likely token always survives)."""
    probs = scaled.softmax(dim=-1)
    if any(m > 0 for m in min_ps):
        threshold = probs.max(dim=-1, keepdim=True).values * torch.tensor(min_ps).unsqueeze(1)
        scaled = scaled.masked_fill(probs < threshold, float("-inf"))
        probs = scaled.softmax(dim=-1)
    if any(p < 1 for p in top_ps):
        scaled = scaled.masked_fill(~_nucleus_mask(probs, torch.tensor(top_ps).unsqueeze(1)), float("-inf"))
    return scaled


# A full vocabulary sort costs ~60-100 ms on 32 x 49152; top-k of a few hundred is ~3 ms and usually enough.
_NUCLEUS_CANDIDATES = (256, 4096)


def _nucleus_mask(probs: torch.Tensor, top_ps: torch.Tensor) -> torch.Tensor:
    """(R, V) bool, True for kept tokens: those whose higher-ranked mass is still below top_p.

    Tries the top candidates first: when their mass reaches top_p, every token outside them has at least
    that much mass ranked above it and is dropped either way. Rows that need more go to the next size,
    the last being a full sort.
    """
    keep = torch.zeros_like(probs, dtype=torch.bool)
    vocab_size = probs.shape[1]
    rows = torch.arange(probs.shape[0])
    for num_candidates in (*_NUCLEUS_CANDIDATES, vocab_size):
        num_candidates = min(num_candidates, vocab_size)
        top_probs, top_ids = probs[rows].topk(num_candidates, dim=-1)
        mass_before = top_probs.cumsum(dim=-1) - top_probs
        row_top_ps = top_ps[rows]
        keep[rows] = keep[rows].scatter_(1, top_ids, mass_before < row_top_ps)
        is_short = (mass_before[:, -1] + top_probs[:, -1]) < row_top_ps.squeeze(1)
        if num_candidates == vocab_size or not bool(is_short.any()):
            break
        rows = rows[is_short]
    return keep


def _logprobs(
    logits: torch.Tensor, rows: list[int], params: list, token_ids: torch.Tensor
) -> list[tuple[float, list[tuple[int, float]]]]:
    log_probs = logits[rows].log_softmax(dim=-1)
    sampled = log_probs.gather(1, token_ids[rows].unsqueeze(1)).squeeze(1).tolist()
    num_top = max(params[i].logprobs for i in rows)
    top_values, top_ids = log_probs.topk(num_top, dim=-1) if num_top else (None, None)
    entries = []
    for j, row in enumerate(rows):
        n = params[row].logprobs
        top = list(zip(top_ids[j, :n].tolist(), top_values[j, :n].tolist(), strict=True)) if n else []
        entries.append((sampled[j], top))
    return entries
