"""The linears' tensors of the modes that convert a checkpoint's weights in torch (``linear_tensors``): dense
float32 (``exact``, and ``auto`` where the kernels cannot run a weight), int8 and int4. Imported only when a
model needs one of them.
"""

from __future__ import annotations

import numpy as np
import torch

from roles.model_files.gguf_checkpoint import RawQuantTensor
from roles.model_files.tensor_types import INT4_GROUP
from roles.weight_format.weight_sources import WeightSource


def _half(blocks: np.ndarray, offset: int) -> np.ndarray:
    """The float16 at ``offset`` of every block, as float32: (rows, groups)."""
    return blocks[..., offset : offset + 2].copy().view(np.float16)[..., 0].astype(np.float32)


def q4_1_to_int4_parts(raw: RawQuantTensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """GGUF Q4_1 blocks -> (codes (out, in) uint8, scales (in/32, out), zeros (in/32, out)); no float weights."""
    blocks = raw.block_view()
    d, m = _half(blocks, 0), _half(blocks, 2)  # (out, groups)
    packed = blocks[..., 4:]  # (out, groups, 16): low nibbles are weights 0..15, high nibbles 16..31
    codes = np.concatenate([packed & 0x0F, packed >> 4], axis=-1).reshape(raw.rows, raw.cols)
    scales = torch.from_numpy(d.T.copy())
    zeros = torch.from_numpy((m + 8.0 * d).T.copy())
    return torch.from_numpy(codes), scales, zeros


def stack_rows(tensors: list[torch.Tensor]) -> torch.Tensor:
    """Weights stacked along output rows."""
    return tensors[0] if len(tensors) == 1 else torch.cat(tensors, dim=0)


def dense_tensors(weight: torch.Tensor) -> dict[str, torch.Tensor]:
    return {"weight": weight.to(torch.float32).contiguous()}


def int8_tensors(weight: torch.Tensor) -> dict[str, torch.Tensor]:
    scales = weight.abs().amax(dim=1).clamp(min=1e-12) / 127.0  # (out,)
    return {
        "weight_int8": torch.round(weight / scales[:, None]).clamp(-127, 127).to(torch.int8),
        "scales": scales.to(torch.bfloat16).contiguous(),
        "scales_float": scales.to(torch.float32).contiguous(),
    }


def quantize_int4_groups(weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Float (out, in) -> group-32 asymmetric (codes, scales, zeros), the layout of q4_1_to_int4_parts."""
    out_features, in_features = weight.shape
    groups = weight.reshape(out_features, in_features // INT4_GROUP, INT4_GROUP)
    low, high = groups.amin(dim=-1), groups.amax(dim=-1)
    scales = ((high - low) / 15.0).clamp(min=1e-12)
    codes = torch.round((groups - low[..., None]) / scales[..., None]).clamp(0, 15).to(torch.uint8)
    zeros = low + 8.0 * scales
    return codes.reshape(out_features, in_features), scales.T.contiguous(), zeros.T.contiguous()


def int4_tensors(codes: torch.Tensor, scales: torch.Tensor, zeros: torch.Tensor) -> dict[str, torch.Tensor]:
    """From (out, in) codes 0..15 and per-group scale/zero (in / 32, out) each."""
    out_features = codes.shape[0]
    group_scales = scales.T.to(torch.float32)
    return {
        "packed": torch.ops.aten._convert_weight_to_int4pack_for_cpu(codes.to(torch.int32).contiguous(), 1),
        "codes": codes.to(torch.uint8).reshape(out_features, -1, INT4_GROUP).contiguous(),
        "group_scales": group_scales.contiguous()[..., None],
        "group_zeros": (zeros.T.to(torch.float32) - 8 * group_scales).contiguous()[..., None],
        "scales_and_zeros": torch.stack([scales, zeros], dim=-1).to(torch.bfloat16).contiguous(),
    }


def _int4(weights: WeightSource, names: list[str], prefer_raw: bool) -> dict[str, torch.Tensor]:
    raws = [weights.raw_tensor(name) for name in names] if prefer_raw else [None]
    if all(raw is not None and raw.type_name == "Q4_1" for raw in raws):
        parts = [q4_1_to_int4_parts(raw) for raw in raws]  # the file's own blocks, exactly
    else:
        parts = [quantize_int4_groups(weights.float_tensor(name)) for name in names]
    return int4_tensors(
        torch.cat([p[0] for p in parts], dim=0),
        torch.cat([p[1] for p in parts], dim=1),
        torch.cat([p[2] for p in parts], dim=1),
    )


def converted_tensors(
    weights: WeightSource, names: list[str], weight_dtype: str, prefer_raw: bool = True
) -> dict[str, torch.Tensor]:
    """One linear's tensors in ``weight_dtype`` (exact, int8 or int4) from the named weights stacked."""
    if weight_dtype == "int4":
        raw = weights.raw_tensor(names[0]) if prefer_raw else None
        in_features = raw.cols if raw is not None else weights.float_tensor(names[0]).shape[1]
        if in_features % INT4_GROUP == 0:
            return _int4(weights, names, prefer_raw)
    weight = stack_rows([weights.float_tensor(name) for name in names])
    if weight_dtype == "exact":
        return dense_tensors(weight)
    return int8_tensors(weight)  # int8, or int4 for a width the group size does not divide
