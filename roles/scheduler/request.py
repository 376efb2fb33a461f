"""What a caller asks for (SamplingParams) and what the engine tracks per request while serving it."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field

import torch


@dataclass
class SamplingParams:
    """Per-request decoding options; defaults are greedy-free plain sampling at temperature 1.

    ``temperature == 0`` means greedy. ``top_k == 0`` and ``top_p == 1`` and ``min_p == 0`` disable those
    filters. ``frequency_penalty`` / ``presence_penalty`` follow OpenAI (subtracted from logits of tokens
    already generated); ``repetition_penalty`` follows Hugging Face (divides positive / multiplies negative
    logits of every token seen in prompt or output). ``logprobs`` asks for the top-N alternatives per token.
    """

    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    min_p: float = 0.0
    repetition_penalty: float = 1.0
    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0
    seed: int | None = None
    max_tokens: int = 16
    stop_token_ids: list[int] = field(default_factory=list)
    ignore_eos: bool = False
    logprobs: int | None = None

    def __post_init__(self) -> None:
        self.stop_token_ids = list(self.stop_token_ids)
        _check(
            math.isfinite(self.temperature) and self.temperature >= 0,
            "temperature must be >= 0",
            self.temperature,
        )
        _check(0 < self.top_p <= 1, "top_p must be in (0, 1]", self.top_p)
        _check(
            isinstance(self.top_k, int) and self.top_k >= 0,
            "top_k must be an integer >= 0 (0 = off)",
            self.top_k,
        )
        _check(0 <= self.min_p <= 1, "min_p must be in [0, 1]", self.min_p)
        _check(
            math.isfinite(self.repetition_penalty) and self.repetition_penalty > 0,
            "repetition_penalty must be > 0",
            self.repetition_penalty,
        )
        _check(
            -2 <= self.frequency_penalty <= 2, "frequency_penalty must be in [-2, 2]", self.frequency_penalty
        )
        _check(-2 <= self.presence_penalty <= 2, "presence_penalty must be in [-2, 2]", self.presence_penalty)
        _check(
            isinstance(self.max_tokens, int) and self.max_tokens >= 1,
            "max_tokens must be >= 1",
            self.max_tokens,
        )
        _check(
            self.seed is None or (isinstance(self.seed, int) and self.seed >= 0),
            "seed must be None or an integer >= 0",
            self.seed,
        )
        _check(
            self.logprobs is None or (isinstance(self.logprobs, int) and 0 <= self.logprobs <= 20),
            "logprobs must be None or an integer in [0, 20]",
            self.logprobs,
        )
        _check(
            all(isinstance(t, int) and t >= 0 for t in self.stop_token_ids),
            "stop_token_ids must be non-negative integers",
            self.stop_token_ids,
        )

    @property
    def is_greedy(self) -> bool:
        return self.temperature == 0

    @property
    def has_penalties(self) -> bool:
        return self.repetition_penalty != 1 or self.frequency_penalty != 0 or self.presence_penalty != 0


def _check(is_ok: bool, bound: str, value: object) -> None:
    if not is_ok:
        raise ValueError(f"{bound}; got {value!r}")


class RequestStatus(enum.Enum):
    WAITING = "waiting"  # queued, or preempted and waiting to be recomputed
    RUNNING = "running"  # holds pages; prefilling in chunks or decoding
    FINISHED = "finished"


class Request:
    """One sequence being served: its tokens, where its KV lives, and how far the model has got.

    ``token_ids`` is prompt + output. ``num_computed_tokens`` of them have K/V in the cache (pages in
    ``page_ids``, in order); the next step computes some of the rest. When a step computes up to the last
    token, its logits give the next output token, so prefill, recompute after preemption and decode are one
    code path. ``page_hashes[i]`` is the prefix-cache chain hash of full page i once it is computed.
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
    )

    def __init__(
        self,
        request_id: str,
        prompt_ids: list[int],
        params: SamplingParams,
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
        self.page_ids: list[int] = []
        self.page_hashes: list[int] = []
        self.num_computed_tokens = 0
        self.num_cached_tokens = 0  # prompt tokens served from the prefix cache at the last admission
        self.num_preemptions = 0
        # A private generator makes a seeded request's draws independent of whatever else is in the batch.
        self.generator: torch.Generator | None = None
        if params.seed is not None:
            self.generator = torch.Generator().manual_seed(params.seed)
        # One (sampled logprob, [(token id, logprob), ...] top-N) per output token when params.logprobs is set.
        self.logprobs: list[tuple[float, list[tuple[int, float]]]] = []
        self.finish_reason: str | None = None
        self.arrival_index = arrival_index
        # prompt + output never exceeds this (model context length, KV capacity).
        self.max_total_tokens = max_total_tokens

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
            f"computed={self.num_computed_tokens}, pages={len(self.page_ids)})"
        )
