"""The gated feed-forward, down(act(gate(x)) * up(x)), with gate|up fused into one linear: SwiGLU (act = SiLU)
for most families, GeGLU with tanh-approximated GELU for Gemma.

The dense decoder layer holds its two linears itself (``gated_mlp``); each expert of a mixture is a ``SwiGLU``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from roles.scheduler.models.quantized_linear import linear_for


def swiglu(gate_up_proj: nn.Module, down_proj: nn.Module, x: torch.Tensor) -> torch.Tensor:
    gate, up = gate_up_proj(x).chunk(2, dim=-1)
    return down_proj(F.silu(gate) * up)


def gated_mlp(
    gate_up_proj: nn.Module, down_proj: nn.Module, x: torch.Tensor, activation: str
) -> torch.Tensor:
    """``activation``: "silu" (SwiGLU) or "gelu_tanh" (Gemma's GELU, tanh approximation)."""
    if activation == "silu":
        return swiglu(gate_up_proj, down_proj, x)
    gate, up = gate_up_proj(x).chunk(2, dim=-1)
    return down_proj(F.gelu(gate, approximate="tanh") * up)


class SwiGLU(nn.Module):
    """gate_up_proj (2 * intermediate, hidden) and down_proj (hidden, intermediate), of whatever linear kind
    the state holds under ``prefix``."""

    def __init__(self, state: dict[str, torch.Tensor], prefix: str, intermediate: int, hidden: int):
        super().__init__()
        self.gate_up_proj = linear_for(state, prefix + "gate_up_proj.", 2 * intermediate, hidden)
        self.down_proj = linear_for(state, prefix + "down_proj.", hidden, intermediate)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return swiglu(self.gate_up_proj, self.down_proj, x)
