"""Rotary position embedding's inverse frequencies (numpy, float32) with the file's theta and optional
rope_scaling: linear, llama3, a GGUF's per-frequency factors (``frequency_factors``, llama.cpp's rope_freqs)
and Phi-3's longrope (the short factors here; the long ones for every position of a sequence past the original
context, ``long_inverse_frequencies``). The one-call kernel step reads them as they are; the op-by-op torch
model's ``RotaryEmbedding`` views them as tensors."""

from __future__ import annotations

import math

import numpy as np


def _exponents(head_dim: int) -> np.ndarray:
    return np.arange(0, head_dim, 2, dtype=np.int64).astype(np.float32) / np.float32(head_dim)


def _llama3_inv_freq(inv_freq: np.ndarray, scaling: dict) -> np.ndarray:
    """Llama 3.1 frequency remap: long wavelengths slowed by ``factor``, short ones kept, a smooth ramp between."""
    factor = np.float32(scaling["factor"])
    low_freq_factor = np.float32(scaling.get("low_freq_factor", 1.0))
    high_freq_factor = np.float32(scaling.get("high_freq_factor", 4.0))
    original_context = np.float32(scaling["original_max_position_embeddings"])
    wavelength = np.float32(2 * math.pi) / inv_freq
    low_freq_wavelength = original_context / low_freq_factor  # longer than this: fully scaled
    high_freq_wavelength = original_context / high_freq_factor  # shorter than this: untouched
    scaled = np.where(wavelength > low_freq_wavelength, inv_freq / factor, inv_freq)
    ramp = (original_context / wavelength - low_freq_factor) / (high_freq_factor - low_freq_factor)
    smoothed = (1 - ramp) * scaled / factor + ramp * scaled
    in_between = (wavelength >= high_freq_wavelength) & (wavelength <= low_freq_wavelength)
    return np.where(in_between, smoothed, scaled).astype(np.float32)


def _factored_inv_freq(factors, head_dim: int, theta: float) -> np.ndarray:
    """longrope's inverse frequencies: each base frequency divided by its factor."""
    return (1.0 / (np.asarray(factors, dtype=np.float32) * np.float32(theta) ** _exponents(head_dim))).astype(
        np.float32
    )


def rope_inverse_frequencies(head_dim: int, theta: float, scaling: dict | None) -> np.ndarray:
    """(head_dim / 2,) float32 inverse frequencies after scaling."""
    inv_freq = (np.float32(1.0) / np.float32(theta) ** _exponents(head_dim)).astype(np.float32)
    if scaling is None:
        return inv_freq
    kind = scaling.get("rope_type", scaling.get("type"))
    if kind in (None, "default"):
        return inv_freq
    if kind == "linear":
        return (inv_freq / np.float32(scaling["factor"])).astype(np.float32)
    if kind == "llama3":
        return _llama3_inv_freq(inv_freq, scaling)
    if kind == "frequency_factors":
        return (inv_freq / np.asarray(scaling["factors"], dtype=np.float32)).astype(np.float32)
    if kind == "longrope":  # the short factors; long_inverse_frequencies gives the long ones
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


def long_inverse_frequencies(head_dim: int, theta: float, scaling: dict) -> np.ndarray:
    """longrope's long factors' inverse frequencies, for the rows of sequences past the original context."""
    return _factored_inv_freq(scaling["long_factor"], head_dim, theta)
