"""Checking a draft against the target model: which drafted tokens a request keeps, and the one after them.

The verification step computes logits at the request's last token and at each of its k drafted tokens,
k + 1 rows. Row i is the target's distribution for the token after draft[:i].

Greedy: keep the longest prefix of the draft equal to the target's argmax at each row, then emit the
argmax of the first row that disagreed (or of the last row when all were kept): exactly the tokens plain
decoding would have produced, up to k + 1 of them per step.

Sampled: the standard speculative rejection sampling (Leviathan et al. 2023, Chen et al. 2023) with a draft
distribution q: keep the drafted x with probability min(1, p(x) / q(x)); at the first rejection draw from the
residual max(p - q, 0), normalised. A draft model's q is the distribution it drew x from (its own logits
through the request's temperature, top_k, min_p and top_p). An n-gram draft is deterministic, q is a point
mass on x, so "keep x with probability p(x)", and the residual is p with x removed. Each emitted token is then
distributed exactly as the target's p, where p is the request's own processed distribution.
"""

from __future__ import annotations

import numpy as np

from roles.scheduler.sampling.sampler import UNSEEDED, draw_index


def accept_greedy(logits: np.ndarray, draft: list[int]) -> list[int]:
    """``logits`` (k + 1, V) -> the kept drafted tokens and the target's next one."""
    targets = logits.argmax(axis=-1).tolist()
    emitted = []
    for drafted, target in zip(draft, targets, strict=False):
        if drafted != target:
            break
        emitted.append(drafted)
    emitted.append(targets[len(emitted)])
    return emitted


def accept_sampled(
    probs: np.ndarray,
    draft: list[int],
    generator: np.random.Generator | None,
    draft_probs: np.ndarray | None = None,
) -> list[int]:
    """``probs`` (k + 1, V), each row a distribution -> the kept drafted tokens and one token drawn from the
    residual of the first rejected row (or from the last row when every drafted token was kept).
    ``draft_probs`` (k, V): the distribution each drafted token was drawn from; None: point masses.
    ``generator``: the request's own stream, None for UNSEEDED."""
    # One uniform per drafted token, drawn together: a seeded request's stream advances the same way
    # whatever is accepted.
    uniforms = (UNSEEDED if generator is None else generator).random(len(draft)).tolist()
    rows, ids = np.arange(len(draft)), np.array(draft, dtype=np.int64)
    kept = probs[rows, ids].tolist()
    drawn = [1.0] * len(draft) if draft_probs is None else draft_probs[rows, ids].tolist()
    emitted = []
    for row, (drafted, p_drafted, q_drafted, uniform) in enumerate(
        zip(draft, kept, drawn, uniforms, strict=True)
    ):
        if uniform * q_drafted < p_drafted:  # uniform < p / q
            emitted.append(drafted)
            continue
        if draft_probs is None:
            residual = probs[row].copy()
            residual[drafted] = 0.0
        else:
            residual = np.maximum(probs[row] - draft_probs[row], 0.0)
        if not residual.sum() > 0:  # p and q rounded apart though they are the same
            emitted.append(drafted)
            continue
        emitted.append(draw_index(residual, generator))
        return emitted
    emitted.append(draw_index(probs[len(draft)], generator))
    return emitted
