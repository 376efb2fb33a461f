"""Linear layers for each weight mode, on torch's CPU kernels.

- "auto": the checkpoint's own Q4_0 / Q4_1 / Q8_0 blocks on roleserve's kernels (``packed_linear``);
  float tensors stay float32 (DenseLinear, also run by the kernels in a decode step).
- "exact": float32 weights, F.linear.
- "int8": symmetric per-output-channel int8, ``aten._weight_int8pack_mm``.
- "int4": asymmetric group-32 int4, ``aten._weight_int4pack_mm_for_cpu``. A GGUF's Q4_1 blocks
  (w = d * q + m per 32 weights) map onto it exactly: scale = d, zero = m + 8 * d, since the kernel
  computes (q - 8) * scale + zero. Other sources are quantised from float32 the same way.

Both kernels get bfloat16 activations and scales: their float32 (and float16) paths are scalar loops,
10-30x slower than the vectorised bfloat16 path on AVX-512 CPUs (measured, torch 2.13). Outputs are
cast back to float32, so everything around the linears stays float32.

The kernels win only for a few rows (decode); for prefill-sized inputs they are ~2x slower than float32
matmul, so above ``KERNEL_MAX_ROWS`` rows the weight is dequantised on the fly (a few % of the matmul)
and multiplied in float32.
"""

from __future__ import annotations

import logging

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from roles.model_files.gguf_checkpoint import RawQuantTensor
from roles.scheduler.kernels import native
from roles.scheduler.models.packed_linear import PACKED_TYPES, PackedLinear, pack_gguf_blocks

log = logging.getLogger("roleserve.scheduler")
_WARNED: set[str] = set()
WEIGHT_DTYPES = ("auto", "exact", "int8", "int4")
INT4_GROUP = 32
KERNEL_MAX_ROWS = 48  # measured crossover: kernels win below ~32-64 rows, float32 matmul above
_Q4_1_BLOCK_BYTES = 20  # float16 d, float16 m, 16 bytes of two 4-bit values each


def stack_rows(tensors: list[torch.Tensor]) -> torch.Tensor:
    """Weights stacked along output rows. Meta tensors (a model rebuilt around cached weights) get an empty
    meta result: torch.cat's meta kernel is a Python decomposition that imports torch._dynamo (~2 s)."""
    if len(tensors) == 1:
        return tensors[0]
    if tensors[0].is_meta:
        rows = sum(t.shape[0] for t in tensors)
        return torch.empty((rows, *tensors[0].shape[1:]), dtype=tensors[0].dtype, device="meta")
    return torch.cat(tensors, dim=0)


def runnable_weight_dtype(weight_dtype: str) -> str:
    """``auto`` falls back to ``exact`` (with a warning that says why) where the CPU kernels cannot run."""
    if weight_dtype != "auto":
        return weight_dtype
    reason = native.unavailable_reason()
    if reason is None:
        return "auto"
    if reason not in _WARNED:
        _WARNED.add(reason)
        log.warning("exec.weight_dtype auto runs as exact (float32): %s", reason)
    return "exact"


class DenseLinear(nn.Module):
    """y = x @ W.T with a float32 weight (out_features, in_features)."""

    def __init__(self, weight: torch.Tensor):
        super().__init__()
        self.weight = nn.Parameter(weight.to(torch.float32).contiguous(), requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.weight)

    def rows(self, ids: torch.Tensor) -> torch.Tensor:
        return F.embedding(ids, self.weight)

    def kernel_view(self) -> native.RsLinear | None:
        """The kernels' view of the weight (F32 kind), or None when in_features is not a multiple of 32."""
        if self.weight.shape[1] % native.GROUP:
            return None
        return native.linear_view(native.F32, self.weight)


class Int8Linear(nn.Module):
    def __init__(self, weight: torch.Tensor):
        super().__init__()
        scales = weight.abs().amax(dim=1).clamp(min=1e-12) / 127.0  # (out,)
        self.register_buffer(
            "weight_int8", torch.round(weight / scales[:, None]).clamp(-127, 127).to(torch.int8)
        )
        self.register_buffer("scales", scales.to(torch.bfloat16).contiguous())

        self.register_buffer("scales_float", scales.to(torch.float32).contiguous())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, x.shape[-1])
        if flat.shape[0] > KERNEL_MAX_ROWS:
            return F.linear(x, self.weight_int8.to(torch.float32) * self.scales_float[:, None])
        out = torch.ops.aten._weight_int8pack_mm(
            flat.to(torch.bfloat16).contiguous(), self.weight_int8, self.scales
        )
        return out.to(torch.float32).view(*x.shape[:-1], -1)


class Int4Linear(nn.Module):
    """Built from (out, in) codes 0..15 and per-group scale/zero (in / 32, out) each."""

    def __init__(self, codes: torch.Tensor, scales: torch.Tensor, zeros: torch.Tensor):
        super().__init__()
        self.out_features = codes.shape[0]
        packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(codes.to(torch.int32).contiguous(), 1)
        self.register_buffer("packed", packed)
        # Unpacked codes and float32 group parameters for the large-input path: (out, in / 32, 32) etc.
        self.register_buffer("codes", codes.to(torch.uint8).reshape(self.out_features, -1, INT4_GROUP))
        self.register_buffer("group_scales", scales.T.to(torch.float32).contiguous()[..., None])
        self.register_buffer(
            "group_zeros", (zeros.T.to(torch.float32) - 8 * scales.T.to(torch.float32))[..., None]
        )
        scales_and_zeros = torch.stack([scales, zeros], dim=-1)  # (in / 32, out, 2)
        self.register_buffer("scales_and_zeros", scales_and_zeros.to(torch.bfloat16).contiguous())

    def dequantized_weight(self) -> torch.Tensor:
        """(out, in) float32: codes * scale + (zero - 8 * scale), the kernel's formula."""
        weight = torch.addcmul(self.group_zeros, self.codes.to(torch.float32), self.group_scales)
        return weight.reshape(self.out_features, -1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, x.shape[-1])
        if flat.shape[0] > KERNEL_MAX_ROWS:
            return F.linear(x, self.dequantized_weight())
        packed_input = flat.to(torch.bfloat16).contiguous()
        out = torch.ops.aten._weight_int4pack_mm_for_cpu(
            packed_input, self.packed, INT4_GROUP, self.scales_and_zeros
        )
        return out.to(torch.float32).view(*x.shape[:-1], self.out_features)


def q4_1_to_int4_parts(raw: RawQuantTensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """GGUF Q4_1 blocks -> (codes (out, in) uint8, scales (in/32, out), zeros (in/32, out)); no float weights."""
    groups = raw.cols // INT4_GROUP
    blocks = raw.blocks.reshape(raw.rows, groups, _Q4_1_BLOCK_BYTES)
    d = blocks[..., 0:2].copy().view(np.float16)[..., 0].astype(np.float32)  # (out, groups)
    m = blocks[..., 2:4].copy().view(np.float16)[..., 0].astype(np.float32)
    packed = blocks[..., 4:]  # (out, groups, 16): low nibbles are weights 0..15, high nibbles 16..31
    codes = np.concatenate([packed & 0x0F, packed >> 4], axis=-1).reshape(raw.rows, raw.cols)
    scales = torch.from_numpy(d.T.copy())
    zeros = torch.from_numpy((m + 8.0 * d).T.copy())
    return torch.from_numpy(codes), scales, zeros


def quantize_int4_groups(weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Float (out, in) -> group-32 asymmetric (codes, scales, zeros), the layout of q4_1_to_int4_parts."""
    out_features, in_features = weight.shape
    groups = weight.reshape(out_features, in_features // INT4_GROUP, INT4_GROUP)
    low, high = groups.amin(dim=-1), groups.amax(dim=-1)
    scales = ((high - low) / 15.0).clamp(min=1e-12)
    codes = torch.round((groups - low[..., None]) / scales[..., None]).clamp(0, 15).to(torch.uint8)
    zeros = low + 8.0 * scales
    return codes.reshape(out_features, in_features), scales.T.contiguous(), zeros.T.contiguous()


def _int4_linear(weights, names: list[str], prefer_raw: bool) -> Int4Linear:
    raws = [weights.raw_tensor(name) for name in names] if prefer_raw else [None]
    if all(raw is not None and raw.type_name == "Q4_1" for raw in raws):
        parts = [q4_1_to_int4_parts(raw) for raw in raws]  # the file's own blocks, exactly
    else:
        parts = [quantize_int4_groups(weights.float_tensor(name)) for name in names]
    codes = torch.cat([p[0] for p in parts], dim=0)
    return Int4Linear(codes, torch.cat([p[1] for p in parts], dim=1), torch.cat([p[2] for p in parts], dim=1))


def _packed_linear(weights, names: list[str]) -> PackedLinear | None:
    """The file's own blocks of every named weight, stacked, when they are all of one packed kind."""
    raws = [weights.raw_tensor(name) for name in names]
    if not all(raw is not None and raw.type_name in PACKED_TYPES for raw in raws):
        return None
    if len({raw.type_name == "Q8_0" for raw in raws}) > 1 or raws[0].cols % native.GROUP:
        return None
    parts = [pack_gguf_blocks(raw) for raw in raws]
    mins = None if parts[0][2] is None else torch.cat([p[2] for p in parts], dim=0)
    return PackedLinear(
        torch.cat([p[0] for p in parts], dim=0), torch.cat([p[1] for p in parts], dim=0), mins
    )


def make_linear(weights, names: list[str], weight_dtype: str, prefer_raw: bool = True) -> nn.Module:
    """One linear whose output rows are the named weights stacked (e.g. Q|K|V), in the given mode."""
    if weight_dtype not in WEIGHT_DTYPES:
        raise ValueError(f"weight_dtype {weight_dtype!r} is not one of {WEIGHT_DTYPES}")
    if weight_dtype == "auto":
        packed = _packed_linear(weights, names)
        if packed is not None:
            return packed
        weight_dtype = "exact"
    in_features = None
    if weight_dtype == "int4":
        raw = weights.raw_tensor(names[0]) if prefer_raw else None
        in_features = raw.cols if raw is not None else weights.float_tensor(names[0]).shape[1]
    if weight_dtype == "int4" and in_features % INT4_GROUP == 0:
        return _int4_linear(weights, names, prefer_raw)
    weight = stack_rows([weights.float_tensor(name) for name in names])
    if weight_dtype == "exact":
        return DenseLinear(weight)
    return Int8Linear(weight)  # int8, or int4 for a width the group size does not divide
