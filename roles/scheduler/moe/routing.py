"""Which experts each token goes to: softmax over the router's logits, the top k, optionally renormalised.

Mixtral always renormalises the chosen weights to sum to 1; Qwen2-MoE only with ``norm_topk_prob``.
"""

from __future__ import annotations

import torch


def route_tokens(
    router_logits: torch.Tensor, top_k: int, renormalise: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """(tokens, experts) logits -> (weights (tokens, top_k) float32, expert ids (tokens, top_k) int64)."""
    probabilities = torch.softmax(router_logits.float(), dim=-1)
    weights, expert_ids = torch.topk(probabilities, top_k, dim=-1)
    if renormalise:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights, expert_ids
