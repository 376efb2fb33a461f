"""POST /admin/expert_distribution/{start,stop,dump}: drive every scheduler replica's expert distribution
recorder. A dump answers with the file each replica wrote (exec.moe.recorder_dir on the scheduler's side)."""

from __future__ import annotations

from roles.tokenizer.front_state import FrontState
from roles.tokenizer.openai_errors import OpenAIError

ACTIONS = ("start", "stop", "dump")
TIMEOUT_S = 60.0  # a dump of a full per_token buffer is the slowest answer


async def control_expert_recording(state: FrontState, action: str) -> dict:
    if action not in ACTIONS:
        raise OpenAIError(404, f"unknown action {action!r}; use one of {', '.join(ACTIONS)}")
    num_replicas = state.client.num_schedulers
    try:
        replies = await state.client.expert_recording(action, num_replicas, TIMEOUT_S)
    except TimeoutError:
        raise OpenAIError(504, f"the schedulers did not answer {action} within {TIMEOUT_S:g}s") from None
    errors = sorted({reply.error for reply in replies if reply.error})
    if errors:
        raise OpenAIError(409, "; ".join(errors), code="expert_recorder_unavailable")
    replicas = [
        {"instance": reply.instance, **({"path": reply.path} if reply.path else {})} for reply in replies
    ]
    return {"object": f"expert_distribution.{action}", "replicas": replicas}
