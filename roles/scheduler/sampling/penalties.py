"""Repetition, frequency and presence penalties applied in place with gathers/scatters over seen tokens.

Cost is O(rows x tokens seen), never a pass over the whole (rows, vocab) matrix. Token lists are padded
to a rectangle with a token already in the row (so duplicate writes agree) and a zero weight.
"""

from __future__ import annotations

import numpy as np

from roles.scheduler.sched.request import Request


def apply_penalties(logits: np.ndarray, requests: list[Request], rows: list[int]) -> None:
    """In place on ``logits[rows]`` (``requests[j]`` owns row ``rows[j]``).

    Repetition (Hugging Face): for every token seen in prompt + output, a positive logit is divided by the
    penalty and a negative one multiplied. Frequency / presence (OpenAI): over generated tokens only,
    ``logit -= frequency * count + presence * (count > 0)``.
    """
    is_all_rows = len(rows) == logits.shape[0]
    target = logits if is_all_rows else logits[rows]
    every_row = np.arange(len(requests))[:, None]
    dtype = logits.dtype
    if any(r.params.repetition_penalty != 1 for r in requests):
        ids, _ = _padded_ids([r.token_ids for r in requests])
        penalty = np.array([r.params.repetition_penalty for r in requests], dtype=dtype)[:, None]
        seen = target[every_row, ids]
        # Every copy of a token id computes the same new value from the same old one, so repeats agree.
        target[every_row, ids] = np.where(seen > 0, seen / penalty, seen * penalty)
    if any(r.params.frequency_penalty != 0 or r.params.presence_penalty != 0 for r in requests):
        ids, is_real = _padded_ids([r.output_ids for r in requests])
        frequency = np.array([r.params.frequency_penalty for r in requests], dtype=dtype)[:, None]
        presence = np.array([r.params.presence_penalty for r in requests], dtype=dtype)[:, None]
        np.add.at(
            target, (np.broadcast_to(every_row, ids.shape), ids), -frequency * is_real
        )  # per occurrence
        # Once per distinct token: all copies write the same value. Rows with no output write back as is.
        has_output = is_real[:, :1]
        target[every_row, ids] = target[every_row, ids] - presence * has_output
    if not is_all_rows:
        logits[rows] = target


def _padded_ids(token_lists: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """(R, L) int64 ids padded with each row's first id (0 for empty rows) and (R, L) float32 1/0 realness."""
    width = max(1, max(len(tokens) for tokens in token_lists))
    padded = [tokens + [tokens[0] if tokens else 0] * (width - len(tokens)) for tokens in token_lists]
    is_real = [[1.0] * len(tokens) + [0.0] * (width - len(tokens)) for tokens in token_lists]
    return np.array(padded, dtype=np.int64), np.array(is_real, dtype=np.float32)
