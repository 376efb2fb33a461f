"""One linear of the model (several checkpoint weights stacked along output rows, e.g. Q|K|V) converted into
the tensors of its weight mode. The leaf names are the scheduler's module buffers; the kind is told by them:

- blocks (``auto``): each stacked weight as its checkpoint stores it, of any type in
  ``roles.model_files.tensor_types`` (a GGUF's blocks, or an HF folder's bf16 / f16 / f32 rows):
  ``blocks_<i>`` (rows_i, row bytes_i) uint8 and ``block_types`` (parts,) int32 ggml type ids.
- dense (``exact``, and ``auto`` where the kernels cannot run a weight, see ``kernel_refusal``):
  ``weight`` (out, in) float32.
- int8 (symmetric per output channel): ``weight_int8`` (out, in) int8, ``scales`` (out,) bfloat16 and
  ``scales_float`` (out,) float32.
- int4 (asymmetric, groups of 32 inputs): ``packed`` (torch's CPU int4pack), ``codes`` (out, in/32, 32)
  uint8, ``group_scales`` and ``group_zeros`` (out, in/32, 1) float32 for the dequantising path, and
  ``scales_and_zeros`` (in/32, out, 2) bfloat16 for the int4 kernel. A GGUF's Q4_1 blocks map onto it
  exactly; other sources are quantised from float32.
"""

from __future__ import annotations

import torch

from roles.model_files.tensor_types import INT4_GROUP, kernel_refusal
from roles.weight_format.gguf_blocks import block_parts, q4_1_to_int4_parts
from roles.weight_format.weight_sources import WeightSource


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


def _blocks(weights: WeightSource, names: list[str]) -> dict[str, torch.Tensor] | None:
    """The checkpoint's own blocks of every named weight, one part each, when the kernels run them all."""
    raws = [weights.raw_tensor(name) for name in names]
    if any(raw is None or kernel_refusal(raw.type_name, raw.cols) is not None for raw in raws):
        return None
    return block_parts(raws)


def linear_tensors(
    weights: WeightSource, names: list[str], weight_dtype: str, prefer_raw: bool = True
) -> dict[str, torch.Tensor]:
    """The tensors of one linear whose output rows are the named weights stacked, in the given mode."""
    if weight_dtype == "auto":
        blocks = _blocks(weights, names)
        if blocks is not None:
            return blocks
        weight_dtype = "exact"
    if weight_dtype == "int4":
        raw = weights.raw_tensor(names[0]) if prefer_raw else None
        in_features = raw.cols if raw is not None else weights.float_tensor(names[0]).shape[1]
        if in_features % INT4_GROUP == 0:
            return _int4(weights, names, prefer_raw)
    weight = stack_rows([weights.float_tensor(name) for name in names])
    if weight_dtype == "exact":
        return dense_tensors(weight)
    return int8_tensors(weight)  # int8, or int4 for a width the group size does not divide
