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

import torch


def accept_greedy(logits: torch.Tensor, draft: list[int]) -> list[int]:
    """``logits`` (k + 1, V) -> the kept drafted tokens and the target's next one."""
    targets = logits.argmax(dim=-1).tolist()
    emitted = []
    for drafted, target in zip(draft, targets, strict=False):
        if drafted != target:
            break
        emitted.append(drafted)
    emitted.append(targets[len(emitted)])
    return emitted


def accept_sampled(
    probs: torch.Tensor,
    draft: list[int],
    generator: torch.Generator | None,
    draft_probs: torch.Tensor | None = None,
) -> list[int]:
    """``probs`` (k + 1, V), each row a distribution -> the kept drafted tokens and one token drawn from the
    residual of the first rejected row (or from the last row when every drafted token was kept).
    ``draft_probs`` (k, V): the distribution each drafted token was drawn from; None: point masses."""
    # One uniform per drafted token, drawn together: a seeded request's stream advances the same way
    # whatever is accepted.
    uniforms = torch.rand(len(draft), generator=generator).tolist()
    rows, ids = torch.arange(len(draft)), torch.tensor(draft, dtype=torch.int64)
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
            residual = probs[row].clone()
            residual[drafted] = 0.0
        else:
            residual = (probs[row] - draft_probs[row]).clamp_(min=0.0)
        if not bool(residual.sum() > 0):  # p and q rounded apart though they are the same
            emitted.append(drafted)
            continue
        emitted.append(_draw(residual, generator))
        return emitted
    emitted.append(_draw(probs[len(draft)], generator))
    return emitted


def _draw(weights: torch.Tensor, generator: torch.Generator | None) -> int:
    """One token from non-negative (V,) weights (multinomial normalises them)."""
    return int(torch.multinomial(weights, 1, generator=generator))
