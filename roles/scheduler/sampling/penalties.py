"""Repetition, frequency and presence penalties applied in place with gathers/scatters over seen tokens.

Cost is O(rows x tokens seen), never a pass over the whole (rows, vocab) matrix. Token lists are padded
to a rectangle with a token already in the row (so duplicate writes agree) and a zero weight.
"""

from __future__ import annotations

import torch

from roles.scheduler.sched.request import Request


def apply_penalties(logits: torch.Tensor, requests: list[Request], rows: list[int]) -> None:
    """In place on ``logits[rows]`` (``requests[j]`` owns row ``rows[j]``).

    Repetition (Hugging Face): for every token seen in prompt + output, a positive logit is divided by the
    penalty and a negative one multiplied. Frequency / presence (OpenAI): over generated tokens only,
    ``logit -= frequency * count + presence * (count > 0)``.
    """
    is_all_rows = len(rows) == logits.shape[0]
    target = logits if is_all_rows else logits[rows]
    if any(r.params.repetition_penalty != 1 for r in requests):
        ids, _ = _padded_ids([r.token_ids for r in requests])
        penalty = torch.tensor([r.params.repetition_penalty for r in requests]).unsqueeze(1)
        seen = target.gather(1, ids)
        # Every copy of a token id computes the same new value from the same old one, so repeats agree.
        target.scatter_(1, ids, torch.where(seen > 0, seen / penalty, seen * penalty))
    if any(r.params.frequency_penalty != 0 or r.params.presence_penalty != 0 for r in requests):
        ids, is_real = _padded_ids([r.output_ids for r in requests])
        frequency = torch.tensor([r.params.frequency_penalty for r in requests]).unsqueeze(1)
        presence = torch.tensor([r.params.presence_penalty for r in requests]).unsqueeze(1)
        target.scatter_add_(1, ids, -frequency * is_real)  # once per occurrence
        # Once per distinct token: all copies write the same value. Rows with no output write back as is.
        has_output = is_real[:, :1]
        target.scatter_(1, ids, target.gather(1, ids) - presence * has_output)
    if not is_all_rows:
        logits[rows] = target


def _padded_ids(token_lists: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """(R, L) int64 ids padded with each row's first id (0 for empty rows) and (R, L) float 1/0 realness."""
    width = max(1, max(len(tokens) for tokens in token_lists))
    padded = [tokens + [tokens[0] if tokens else 0] * (width - len(tokens)) for tokens in token_lists]
    is_real = [[1.0] * len(tokens) + [0.0] * (width - len(tokens)) for tokens in token_lists]
    return torch.tensor(padded, dtype=torch.int64), torch.tensor(is_real)
