"""The sparse mixture-of-experts feed-forward of Mixtral and Qwen2-MoE layers.

Tokens are grouped by expert: the (token, expert) pairs are sorted by expert id, and each expert chosen at
least once runs once, on the rows of its tokens (``index_select``), its weighted output added back into
those tokens' rows (``index_add_``), experts in increasing id order. Qwen2-MoE adds a shared expert that
every token goes through, scaled by ``sigmoid(shared_expert_gate(x))``.

``on_route(layer_index, slots)``, when set, is told each step's chosen physical expert slots (tokens,
top_k); on one rank, slot e holds expert e.

Under expert parallelism (``shard``) the block holds only this rank's slots and the routed experts run
wherever they live (the shard's exchange, ``roles.scheduler.expert_parallel.exchange``); the router and the shared expert are on
every rank.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from roles.model_files.model_shape import ModelShape
from roles.scheduler.models.placeholders import meta
from roles.scheduler.models.swiglu import SwiGLU
from roles.scheduler.moe.combine import run_experts
from roles.scheduler.moe.routing import route_tokens
from roles.scheduler.moe.shard_view import ShardView

RouteObserver = Callable[[int, torch.Tensor], None]


class SparseMoeBlock(nn.Module):
    def __init__(
        self,
        shape: ModelShape,
        layer_index: int,
        state: dict[str, torch.Tensor],
        prefix: str,
        on_route: RouteObserver | None = None,
        shard: ShardView | None = None,
    ):
        super().__init__()
        hidden = shape.hidden_size
        self.layer_index = layer_index
        self.top_k = shape.experts_per_token
        self.renormalise = shape.norm_topk_prob
        self.on_route = on_route
        self.router = nn.Parameter(meta((shape.num_experts, hidden)), requires_grad=False)
        self.exchange = None if shard is None else shard.exchange(layer_index)
        num_slots = shape.num_experts if shard is None else shard.placement.slots_per_rank
        self.experts = nn.ModuleList(
            SwiGLU(state, f"{prefix}experts.{slot}.", shape.moe_intermediate_size, hidden)
            for slot in range(num_slots)
        )
        self.shared_expert = None
        self.shared_expert_gate = None
        if shape.shared_expert_intermediate_size:
            inter = shape.shared_expert_intermediate_size
            self.shared_expert = SwiGLU(state, prefix + "shared_expert.", inter, hidden)
            self.shared_expert_gate = nn.Parameter(meta((1, hidden)), requires_grad=False)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        """hidden (T, hidden_size), already normed -> the feed-forward's output (T, hidden_size)."""
        weights, expert_ids = route_tokens(F.linear(hidden, self.router), self.top_k, self.renormalise)
        slots = expert_ids if self.exchange is None else self.exchange.slots_for(expert_ids)
        if self.on_route is not None:
            self.on_route(self.layer_index, slots)
        if self.exchange is None:
            out = run_experts(hidden, weights, expert_ids, self.experts)
        else:  # also with no tokens here: the other ranks' tokens may need this rank's experts
            out = self.exchange.run(hidden, weights, slots, self.experts)
        if self.shared_expert is not None and hidden.shape[0]:
            gate = torch.sigmoid(F.linear(hidden, self.shared_expert_gate))
            out = out + gate * self.shared_expert(hidden)
        return out
