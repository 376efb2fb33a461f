"""Rotary position embedding (HF rotate_half layout) with the file's theta and optional rope_scaling:
linear, llama3, a GGUF's per-frequency factors (``frequency_factors``, llama.cpp's rope_freqs) and Phi-3's
longrope (cos/sin scaled, the short factors for a sequence within the original context, the long ones for every
position of a longer sequence: the step marks those rows, ``ForwardBatch.long_rope_rows``)."""

from __future__ import annotations

import math

import torch


def _llama3_inv_freq(inv_freq: torch.Tensor, scaling: dict) -> torch.Tensor:
    """Llama 3.1 frequency remap: long wavelengths slowed by ``factor``, short ones kept, a smooth ramp between."""
    factor = float(scaling["factor"])
    low_freq_factor = float(scaling.get("low_freq_factor", 1.0))
    high_freq_factor = float(scaling.get("high_freq_factor", 4.0))
    original_context = float(scaling["original_max_position_embeddings"])
    wavelength = 2 * math.pi / inv_freq
    low_freq_wavelength = original_context / low_freq_factor  # longer than this: fully scaled
    high_freq_wavelength = original_context / high_freq_factor  # shorter than this: untouched
    scaled = torch.where(wavelength > low_freq_wavelength, inv_freq / factor, inv_freq)
    ramp = (original_context / wavelength - low_freq_factor) / (high_freq_factor - low_freq_factor)
    smoothed = (1 - ramp) * scaled / factor + ramp * scaled
    in_between = (wavelength >= high_freq_wavelength) & (wavelength <= low_freq_wavelength)
    return torch.where(in_between, smoothed, scaled)


def _factored_inv_freq(factors, head_dim: int, theta: float) -> torch.Tensor:
    """longrope's inverse frequencies: each base frequency divided by its factor."""
    exponents = torch.arange(0, head_dim, 2, dtype=torch.int64).to(torch.float32) / head_dim
    return 1.0 / (torch.tensor(factors, dtype=torch.float32) * theta**exponents)


def rope_inverse_frequencies(head_dim: int, theta: float, scaling: dict | None) -> torch.Tensor:
    """(head_dim / 2,) float32 inverse frequencies after scaling."""
    exponents = torch.arange(0, head_dim, 2, dtype=torch.int64).to(torch.float32) / head_dim
    inv_freq = 1.0 / (theta**exponents)
    if scaling is None:
        return inv_freq
    kind = scaling.get("rope_type", scaling.get("type"))
    if kind in (None, "default"):
        return inv_freq
    if kind == "linear":
        return inv_freq / float(scaling["factor"])
    if kind == "llama3":
        return _llama3_inv_freq(inv_freq, scaling)
    if kind == "frequency_factors":
        return inv_freq / torch.tensor(scaling["factors"], dtype=torch.float32)
    if kind == "longrope":  # the short factors; RotaryEmbedding switches to the long ones
        return _factored_inv_freq(scaling["short_factor"], head_dim, theta)
    raise ValueError(
        f"rope_scaling type {kind!r} is not supported "
        "(supported: default, linear, llama3, frequency_factors, longrope)"
    )


def long_rope_from(scaling: dict | None) -> int | None:
    """longrope's original context, past which a sequence rotates with the long factors; None without longrope."""
    if scaling is None or scaling.get("rope_type") != "longrope":
        return None
    return int(scaling["original_max_position_embeddings"])


class RotaryEmbedding:
    """cos/sin for a step's positions are computed once per forward and reused by every layer."""

    def __init__(self, head_dim: int, theta: float, scaling: dict | None):
        self.inv_freq = rope_inverse_frequencies(head_dim, theta, scaling)
        self.long_inv_freq = None  # longrope: for the rows of sequences past the original context
        self.magnitude = 1.0  # cos and sin scaled by it (longrope's attention factor)
        if long_rope_from(scaling) is not None:
            self.long_inv_freq = _factored_inv_freq(scaling["long_factor"], head_dim, theta)
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
