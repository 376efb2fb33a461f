"""Linear layers for each weight mode, around tensors converted by ``roles.weight_format.linear_tensors``.

- "auto": the checkpoint's own blocks, of any supported tensor type, on roleserve's kernels
  (``block_linear``); a weight the kernels cannot run stays float32 (DenseLinear).
- "exact": float32 weights, F.linear.
- "int8": symmetric per-output-channel int8, ``aten._weight_int8pack_mm``.
- "int4": asymmetric group-32 int4, ``aten._weight_int4pack_mm_for_cpu``, computing
  (q - 8) * scale + zero per group.

Both kernels get bfloat16 activations and scales: their float32 (and float16) paths are scalar loops,
10-30x slower than the vectorised bfloat16 path on AVX-512 CPUs (measured, torch 2.13). Outputs are
cast back to float32, so everything around the linears stays float32.

The kernels win only for a few rows (decode); for prefill-sized inputs they are ~2x slower than float32
matmul, so above ``KERNEL_MAX_ROWS`` rows the weight is dequantised on the fly (a few % of the matmul)
and multiplied in float32.

Each module is built from its (out_features, in_features) with placeholders (``empty``); ``linear_for``
picks the kind the converted state holds, and ``state_loading.load_state`` fills in the tensors.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from roles.model_files.tensor_types import BY_NAME, INT4_GROUP
from roles.scheduler.kernels import native
from roles.scheduler.models.block_linear import BlockLinear
from roles.scheduler.models.kernel_linear import takes_int8_inputs
from roles.scheduler.models.placeholders import meta

F32_TYPE_ID = BY_NAME["F32"].type_id

KERNEL_MAX_ROWS = 48  # measured crossover: kernels win below ~32-64 rows, float32 matmul above


class DenseLinear(nn.Module):
    """y = x @ W.T with a float32 weight (out_features, in_features)."""

    def __init__(self, out_features: int, in_features: int):
        super().__init__()
        self.weight = nn.Parameter(meta((out_features, in_features)), requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.weight)

    def rows(self, ids: torch.Tensor) -> torch.Tensor:
        return F.embedding(ids, self.weight)

    def kernel_view(self) -> native.RsLinear | None:
        """The kernels' view of the weight (one F32 part), or None when in_features is not a multiple of 32."""
        if self.weight.shape[1] % native.GROUP:
            return None
        return native.linear_view(
            [(F32_TYPE_ID, self.weight.view(torch.uint8).numpy())], self.weight.shape[1]
        )


class Int8Linear(nn.Module):
    def __init__(self, out_features: int, in_features: int):
        super().__init__()
        self.register_buffer("weight_int8", meta((out_features, in_features), torch.int8))
        self.register_buffer("scales", meta((out_features,), torch.bfloat16))
        self.register_buffer("scales_float", meta((out_features,)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, x.shape[-1])
        if flat.shape[0] > KERNEL_MAX_ROWS:
            return F.linear(x, self.weight_int8.to(torch.float32) * self.scales_float[:, None])
        out = torch.ops.aten._weight_int8pack_mm(
            flat.to(torch.bfloat16).contiguous(), self.weight_int8, self.scales
        )
        return out.to(torch.float32).view(*x.shape[:-1], -1)


class Int4Linear(nn.Module):
    def __init__(self, out_features: int, in_features: int):
        super().__init__()
        self.out_features = out_features
        groups = in_features // INT4_GROUP
        self.register_buffer("packed", meta((out_features, in_features // 2), torch.uint8))
        self.register_buffer("codes", meta((out_features, groups, INT4_GROUP), torch.uint8))
        self.register_buffer("group_scales", meta((out_features, groups, 1)))
        self.register_buffer("group_zeros", meta((out_features, groups, 1)))
        self.register_buffer("scales_and_zeros", meta((groups, out_features, 2), torch.bfloat16))

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


def has_linear(state: dict[str, torch.Tensor], prefix: str) -> bool:
    return any(name.startswith(prefix) for name in state)


def linear_for(state: dict[str, torch.Tensor], prefix: str, out_features: int, in_features: int) -> nn.Module:
    """An empty linear of the kind whose tensors ``state`` holds under ``prefix`` (e.g. "layers.0.o_proj.")."""
    types = state.get(prefix + "block_types")
    if types is not None:
        part_rows = [state[f"{prefix}blocks_{index}"].shape[0] for index in range(len(types))]
        if sum(part_rows) != out_features:
            raise ValueError(f"{prefix}blocks_* hold {sum(part_rows)} rows; the model expects {out_features}")
        return BlockLinear.empty(in_features, types.tolist(), part_rows, takes_int8_inputs(prefix))
    if prefix + "weight" in state:
        return DenseLinear(out_features, in_features)
    if prefix + "weight_int8" in state:
        return Int8Linear(out_features, in_features)
    if prefix + "packed" in state:
        return Int4Linear(out_features, in_features)
    raise ValueError(
        f"the weights hold no linear {prefix.removesuffix('.')!r} (no {prefix}block_types, weight, "
        "weight_int8 or packed tensor)"
    )
