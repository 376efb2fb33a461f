"""What the engine tracks per request while serving it. What the caller asked for is its
``roles.protocol.SamplingFields``, declared once for the HTTP front, the wire and the engine."""

from __future__ import annotations

import enum
import time

import numpy as np

from roles.protocol import SamplingFields


class RequestStatus(enum.Enum):
    WAITING = "waiting"  # queued, or preempted and waiting to be recomputed
    RUNNING = "running"  # holds pages; prefilling in chunks or decoding
    FINISHED = "finished"


class Request:
    """One sequence being served: its tokens, where its KV lives, and how far the model has got.

    ``token_ids`` is prompt + output. ``num_computed_tokens`` of them have K/V in the cache (pages in
    ``page_ids[g]``, in order: one block table per attention group, [] while it holds none); the next step
    computes some of the rest. When a step computes up to the last token, its logits give the next output
    token, so prefill, recompute after preemption and decode are one code path. ``page_hashes[i]`` is the prefix-cache chain hash of full page i once it is computed.
    ``long_rope`` is set once the sequence is longer than longrope's original context: from then on all its
    positions rotate with the long factors (``BatchScheduler`` recomputes what the short ones had computed).
    """

    __slots__ = (
        "request_id",
        "params",
        "token_ids",
        "num_prompt_tokens",
        "status",
        "page_ids",
        "page_hashes",
        "num_computed_tokens",
        "num_cached_tokens",
        "num_preemptions",
        "generator",
        "logprobs",
        "finish_reason",
        "arrival_index",
        "max_total_tokens",
        "matcher",
        "arrived_at",
        "queue_time_s",
        "long_rope",
    )

    def __init__(
        self,
        request_id: str,
        prompt_ids: list[int],
        params: SamplingFields,
        arrival_index: int = 0,
        max_total_tokens: int | None = None,
    ):
        if len(prompt_ids) == 0:
            raise ValueError("prompt_ids must hold at least one token")
        self.request_id = request_id
        self.params = params
        self.token_ids: list[int] = list(prompt_ids)
        self.num_prompt_tokens = len(self.token_ids)
        self.status = RequestStatus.WAITING
        self.page_ids: list[list[int]] = []
        self.page_hashes: list[int] = []
        self.num_computed_tokens = 0
        self.num_cached_tokens = 0  # prompt tokens served from the prefix cache at the last admission
        self.num_preemptions = 0
        # A private generator makes a seeded request's draws independent of whatever else is in the batch.
        self.generator: np.random.Generator | None = None
        if params.seed is not None:
            self.generator = np.random.default_rng(params.seed)
        # One (sampled logprob, [(token id, logprob), ...] top-N) per output token when params.logprobs is set.
        self.logprobs: list[tuple[float, list[tuple[int, float]]]] = []
        self.finish_reason: str | None = None
        self.arrival_index = arrival_index
        # prompt + output never exceeds this (model context length, KV capacity).
        self.max_total_tokens = max_total_tokens
        # The llguidance matcher of a request with structured output (token_constraints), else None.
        self.matcher = None
        self.arrived_at = time.monotonic()
        self.queue_time_s: float | None = None  # arrival to first scheduled; kept across preemptions
        self.long_rope = False

    @property
    def num_tokens(self) -> int:
        return len(self.token_ids)

    @property
    def output_ids(self) -> list[int]:
        return self.token_ids[self.num_prompt_tokens :]

    @property
    def num_output_tokens(self) -> int:
        return len(self.token_ids) - self.num_prompt_tokens

    @property
    def is_finished(self) -> bool:
        return self.status is RequestStatus.FINISHED

    def __repr__(self) -> str:
        return (
            f"Request({self.request_id!r}, status={self.status.value}, tokens={self.num_tokens}, "
            f"computed={self.num_computed_tokens}, pages={[len(table) for table in self.page_ids]})"
        )
