"""POST /admin/expert_distribution/{start,stop,dump}: drive every scheduler replica's expert distribution
recorder. A dump answers with the file each replica wrote (exec.moe.recorder_dir on the scheduler's side).
POST /admin/eplb/rebalance: rebalance the experts over the expert-parallel ranks now."""

from __future__ import annotations

from roles.tokenizer.front_state import FrontState
from roles.tokenizer.openai_errors import OpenAIError

ACTIONS = ("start", "stop", "dump")
TIMEOUT_S = 60.0  # a dump of a full per_token buffer is the slowest answer


async def control_expert_recording(state: FrontState, action: str) -> dict:
    if action not in ACTIONS:
        raise OpenAIError(404, f"unknown action {action!r}; use one of {', '.join(ACTIONS)}")
    replies = await _ask_every_scheduler(state, action)
    replicas = [
        {"instance": reply.instance, **({"path": reply.path} if reply.path else {})} for reply in replies
    ]
    return {"object": f"expert_distribution.{action}", "replicas": replicas}


async def rebalance_experts(state: FrontState) -> dict:
    """Every rank rebalances at the same step; each answers what it did (the same plan on every rank)."""
    replies = await _ask_every_scheduler(state, "rebalance")
    return {
        "object": "eplb.rebalance",
        "replicas": [{"instance": reply.instance, **(reply.rebalance or {})} for reply in replies],
    }


async def _ask_every_scheduler(state: FrontState, action: str):
    num_replicas = state.client.num_schedulers
    try:
        replies = await state.client.expert_command(action, num_replicas, TIMEOUT_S)
    except TimeoutError:
        raise OpenAIError(504, f"the schedulers did not answer {action} within {TIMEOUT_S:g}s") from None
    errors = sorted({reply.error for reply in replies if reply.error})
    if errors:
        code = "expert_rebalance_unavailable" if action == "rebalance" else "expert_recorder_unavailable"
        raise OpenAIError(409, "; ".join(errors), code=code)
    return replies
