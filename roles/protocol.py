"""Typed messages between processes: msgspec structs, tagged unions, msgpack. No pickle on any socket.

Channels:
  control   launcher ROUTER  <-> every child's DEALER: Ready, Heartbeat, InspectQuery/InspectReply, Shutdown
  requests  tokenizer -> (dp_controller ->) scheduler: Generate, Abort
  results   scheduler -> tokenizer[i]: TokenBatch, Overloaded, LoadReport;  scheduler -> dp_controller: LoadReport

SamplingFields is the one declaration of the sampling options: their names, defaults and bounds. The HTTP front
validates a request's options against it once (``validate_sampling``); the engine reads the same struct.
"""

from __future__ import annotations

from typing import Annotated

import msgspec


class Ready(msgspec.Struct, tag=True):
    role: str
    instance: int
    pid: int
    fingerprint: str
    projection: list[str]


class Heartbeat(msgspec.Struct, tag=True):
    """child -> launcher, a few times a second: this process is alive. A role whose work comes in steps (the
    scheduler) also says how many it has completed and how many requests it holds, so the launcher tells a
    busy process (steps advance) from a stuck one (requests held, no step completes)."""

    role: str
    instance: int
    num_steps: int | None = None  # steps completed since the process started; None: the role has no steps
    num_unfinished: int = 0  # requests running or waiting in it


class InspectQuery(msgspec.Struct, tag=True):
    """launcher -> child: send what you published. tokenizer -> launcher: gather every process's answer."""

    query_id: int


class InspectReply(msgspec.Struct, tag=True):
    query_id: int
    entries_json: str  # one JSON list of runtime_context.inspect_report entries


class Shutdown(msgspec.Struct, tag=True):
    reason: str
    drain_timeout_s: float = 0.0  # how long in-flight requests may finish (launcher.shutdown_timeout_s)


class RoleHealth(msgspec.Struct, tag=True):
    """Launcher -> HTTP fronts, whenever it changes: the children requests wait on that are late or down
    (empty: all heard from in time). /health answers 503 while any is."""

    unavailable: list[str]  # "scheduler[0] (late)", "dp_controller[0] (down)"


class RoleFailed(msgspec.Struct, tag=True):
    """Launcher -> HTTP fronts, the moment a child requests wait on died or was declared hung: the requests
    waiting on it are answered with a 503 naming it (they cannot finish), whether it is restarted or not."""

    name: str  # "scheduler[0]"
    description: str  # "scheduler[0] (pid 41) was killed by signal SIGKILL"


# Token ids and counts fit 32 bits; bounding them keeps every value msgpack can carry and torch can index.
_INT32_MAX = 2**31 - 1


def _bounded(kind: type, description: str, **bounds) -> object:
    return Annotated[kind, msgspec.Meta(description=description, **bounds)]


class SamplingFields(msgspec.Struct):
    """How one request is decoded. Bounds are checked by ``validate_sampling`` and by every msgpack decode."""

    temperature: _bounded(float, "0 is greedy; higher flattens the distribution", ge=0, le=2) = 1.0
    top_p: _bounded(
        float, "keep the smallest set of likeliest tokens reaching this mass; 1 is off", gt=0, le=1
    ) = 1.0
    top_k: _bounded(int, "keep the k likeliest tokens; 0 is off", ge=0, le=_INT32_MAX) = 0
    min_p: _bounded(
        float, "drop tokens below min_p times the likeliest one's probability; 0 is off", ge=0, le=1
    ) = 0.0
    repetition_penalty: _bounded(
        float, "Hugging Face's: divides logits of tokens seen in prompt or output", gt=0
    ) = 1.0
    frequency_penalty: _bounded(
        float, "OpenAI's: minus this times a token's count in the output", ge=-2, le=2
    ) = 0.0
    presence_penalty: _bounded(
        float, "OpenAI's: minus this once for a token already in the output", ge=-2, le=2
    ) = 0.0
    seed: _bounded(int, "a private random stream, the same in any batch", ge=0, le=2**63 - 1) | None = None
    # The HTTP front always sets it: the request's own, else tokenizer.default_max_tokens shrunk to the context.
    max_tokens: _bounded(int, "most tokens to generate", ge=1, le=_INT32_MAX) = 16
    stop_token_ids: list[_bounded(int, "a token id that ends the request", ge=0, le=_INT32_MAX)] = []
    ignore_eos: bool = False
    logprobs: _bounded(int, "report the top-N alternatives of each token", ge=0, le=20) | None = None

    @property
    def is_greedy(self) -> bool:
        return self.temperature == 0

    @property
    def has_penalties(self) -> bool:
        return self.repetition_penalty != 1 or self.frequency_penalty != 0 or self.presence_penalty != 0


SAMPLING_FIELD_NAMES = frozenset(SamplingFields.__struct_fields__)


class SamplingError(ValueError):
    """One sampling option out of its bounds; ``field`` names it (as the caller spelled it)."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field


def validate_sampling(values: dict[str, object], names: dict[str, str] | None = None) -> SamplingFields:
    """The one validation of sampling options: ``values`` keyed by field name; ``names`` maps a field to the
    name the caller used for it (e.g. ``max_tokens`` -> ``max_completion_tokens``) so the error names that."""
    try:
        return msgspec.convert(values, SamplingFields)
    except msgspec.ValidationError as error:
        message, _, where = str(error).partition(" - at `$.")
        field = where.rstrip("`").split("[")[0] or "sampling"
        value = values.get(field)
        shown = (names or {}).get(field, field)
        raise SamplingError(shown, f"{message}; got {value!r}") from None


class Generate(msgspec.Struct, tag=True):
    request_id: str
    reply_to: int  # tokenizer instance that owns the client connection
    prompt_ids: list[int]
    sampling: SamplingFields
    # What the output must match: an llguidance grammar the tokenizer compiled and checked (structured
    # output, tool calls); the scheduler masks every token with it. None: free text.
    grammar: str | None = None


class Abort(msgspec.Struct, tag=True):
    request_id: str


class ExpertCommand(msgspec.Struct, tag=True):
    """tokenizer -> every scheduler (the dp_controller forwards it to each replica): start, stop or dump the
    expert distribution recording, or rebalance the experts over the expert-parallel ranks."""

    action: str  # start | stop | dump | rebalance
    query_id: str
    reply_to: int  # tokenizer instance waiting for the answers
    sequence: int = 0  # numbered by the dp_controller: expert-parallel ranks run commands in this order


class ExpertCommandReply(msgspec.Struct, tag=True):
    """scheduler -> tokenizer: one replica's answer; `path` is the dump file, `rebalance` what a rebalance
    did (see RebalanceOutcome), `error` why it could not act."""

    query_id: str
    instance: int
    error: str | None = None
    path: str | None = None
    rebalance: dict | None = None


class TokenEvent(msgspec.Struct, array_like=True):
    request_id: str
    token_id: int  # -1 when the event carries no token (abort, rejection)
    logprob: float | None
    top_logprobs: list[tuple[int, float]] | None
    finish_reason: (
        str | None
    )  # stop | length | abort | error (refused) | lost (its replica died) | failed (a role it waited on failed)
    error: str | None = None  # set when the scheduler refused the request
    num_cached_tokens: int | None = None  # on the first token: prompt tokens served from the prefix cache
    queue_time_s: float | None = None  # on the first token: its wait in the scheduler before first scheduled


class TokenBatch(msgspec.Struct, tag=True):
    events: list[TokenEvent]


class Overloaded(msgspec.Struct, tag=True):
    """scheduler -> tokenizer: the request was not queued because the scheduler holds
    schedule.max_running_requests + schedule.max_queued_requests already; the client may retry later."""

    request_id: str
    retry_after_s: float


class ExpertBalancedness(msgspec.Struct):
    """A scheduler's balancedness so far, for Prometheus (exec.moe.expert_balancedness_report_mode):
    a summary of per-pass balancedness and, per MoE layer, a histogram of the tokens each EP rank computed."""

    num_passes: int
    balancedness_sum: float
    current: float
    rolling: dict[str, float]  # window in passes -> mean balancedness over it
    bucket_bounds: list[float]  # upper bounds of the tokens-per-rank buckets (+Inf implied)
    layer_bucket_counts: list[list[int]]  # [layer][bucket, +Inf last] observations, not cumulative
    layer_token_sums: list[float]  # [layer] tokens observed


class LoadReport(msgspec.Struct, tag=True):
    """A scheduler's load, sent to every tokenizer (for /metrics) and to the dp_controller (which forgets the
    finished requests) when it changed, at most every few tens of milliseconds."""

    instance: int
    num_running: int
    num_waiting: int
    num_kv_pages_used: int
    num_kv_pages_total: int
    num_dropped_frames: int = 0
    finished: list[str] = []  # request ids that ended (or were refused) since the last report
    expert_balancedness: ExpertBalancedness | None = None  # only when exported to Prometheus
    # Expert rebalances on this rank so far, {"applied": n, "skipped": n}; None when it cannot rebalance.
    expert_rebalances: dict[str, int] | None = None
    started_at: float = 0.0  # when this scheduler process started (unix s): a new value is a restart
    # Since the scheduler started, counted at each request's first token (as usage.cached_tokens is):
    num_prompt_tokens: int = 0  # prompt tokens of the requests that got a first token
    num_cached_prompt_tokens: int = 0  # of those, the ones the prefix cache held
    is_full: bool = False  # it holds as many requests as it may: the next one is refused (Overloaded)
    # Speculative decoding since the scheduler started (exec.speculative_method): tokens drafted, drafted
    # tokens kept, verification rows run (one per drafted request and step), tokens they emitted.
    num_spec_drafted_tokens: int = 0
    num_spec_accepted_tokens: int = 0
    num_spec_verifications: int = 0
    num_spec_emitted_tokens: int = 0

    @property
    def kv_usage(self) -> float:
        return self.num_kv_pages_used / max(1, self.num_kv_pages_total)


class EmbedRequest(msgspec.Struct, tag=True):
    """tokenizer -> encoder: texts (the encoder tokenizes with its own tokenizer) or token ids."""

    request_id: str
    reply_to: int
    texts: list[str] | None = None
    token_ids: list[list[int]] | None = None


class EmbedResult(msgspec.Struct, tag=True):
    request_id: str
    vectors: bytes = b""  # float32, row-major (num_inputs, dimensions)
    dimensions: int = 0
    num_tokens: int = 0
    error: str | None = None  # a 400-class problem with the input (too long, bad ids)


class EncoderInfo(msgspec.Struct, tag=True):
    """encoder -> tokenizers, at start and then periodically: what /v1/models and /v1/embeddings offer."""

    name: str
    dimensions: int
    max_input_tokens: int


ControlMsg = Ready | Heartbeat | InspectQuery | InspectReply | Shutdown | RoleHealth | RoleFailed
RequestMsg = Generate | Abort | ExpertCommand
ResultMsg = TokenBatch | Overloaded | LoadReport | ExpertCommandReply
EmbedChannelMsg = EmbedRequest | EmbedResult | EncoderInfo

_encoder = msgspec.msgpack.Encoder()
control_decoder = msgspec.msgpack.Decoder(ControlMsg)
request_decoder = msgspec.msgpack.Decoder(RequestMsg)
result_decoder = msgspec.msgpack.Decoder(ResultMsg)
embed_decoder = msgspec.msgpack.Decoder(EmbedChannelMsg)


def encode(message: msgspec.Struct) -> bytes:
    return _encoder.encode(message)


class FrameCounter:
    """Malformed frames are dropped and counted, never allowed to crash a process."""

    def __init__(self) -> None:
        self.num_dropped = 0

    def decode(self, decoder: msgspec.msgpack.Decoder, frame: bytes):
        try:
            return decoder.decode(frame)
        except (msgspec.DecodeError, msgspec.ValidationError):
            self.num_dropped += 1
            return None

    def drop(self) -> None:
        """A message that decoded but cannot be acted on (a wrong frame count, an index out of range)."""
        self.num_dropped += 1
