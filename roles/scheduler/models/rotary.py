"""Rotary position embedding (HF rotate_half layout) in torch, from the inverse frequencies of
``rope_frequencies`` (the file's theta and rope_scaling). Phi-3's longrope scales cos/sin and rotates a
sequence within the original context with the short factors, every position of a longer one with the long
ones: the step marks those rows, ``ForwardBatch.long_rope_rows``."""

from __future__ import annotations

import torch

from roles.scheduler.models.rope_frequencies import (
    long_inverse_frequencies,
    long_rope_from,
    rope_inverse_frequencies,
)


class RotaryEmbedding:
    """cos/sin for a step's positions are computed once per forward and reused by every layer."""

    def __init__(self, head_dim: int, theta: float, scaling: dict | None):
        self.inv_freq = torch.from_numpy(rope_inverse_frequencies(head_dim, theta, scaling))
        self.long_inv_freq = None  # longrope: for the rows of sequences past the original context
        self.magnitude = 1.0  # cos and sin scaled by it (longrope's attention factor)
        if long_rope_from(scaling) is not None:
            self.long_inv_freq = torch.from_numpy(long_inverse_frequencies(head_dim, theta, scaling))
            self.magnitude = float(scaling["attention_factor"])

    def cos_sin(
        self, positions: torch.Tensor, long_rows: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """positions (T,) -> cos, sin of shape (T, 1, head_dim), broadcast over heads. ``long_rows`` (T,) bool
        marks the rows of sequences past longrope's original context (None: none is)."""
        places = positions.to(torch.float32)[:, None]
        freqs = places * self.inv_freq[None, :]
        if self.long_inv_freq is not None and long_rows is not None:
            freqs = torch.where(long_rows[:, None], places * self.long_inv_freq[None, :], freqs)
        angles = torch.cat((freqs, freqs), dim=-1)
        if self.magnitude != 1.0:
            return (angles.cos() * self.magnitude)[:, None, :], (angles.sin() * self.magnitude)[:, None, :]
        return angles.cos()[:, None, :], angles.sin()[:, None, :]


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x (T, heads, head_dim): rotate each (first half, second half) pair by the position's angle."""
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin
