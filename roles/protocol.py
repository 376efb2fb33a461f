"""Typed messages between processes: msgspec structs, tagged unions, msgpack. No pickle on any socket.

Channels:
  control   launcher ROUTER  <-> every child's DEALER: Ready, Heartbeat, InspectQuery/InspectReply, Shutdown
  requests  tokenizer -> (dp_controller ->) scheduler: Generate, Abort
  results   scheduler -> tokenizer[i]: TokenBatch;  scheduler -> dp_controller: LoadReport
"""

from __future__ import annotations

import msgspec


class Ready(msgspec.Struct, tag=True):
    role: str
    instance: int
    pid: int
    fingerprint: str
    projection: list[str]


class Heartbeat(msgspec.Struct, tag=True):
    role: str
    instance: int
    load: dict[str, int] = {}


class InspectQuery(msgspec.Struct, tag=True):
    """launcher -> child: send what you published. tokenizer -> launcher: gather every process's answer."""

    query_id: int


class InspectReply(msgspec.Struct, tag=True):
    query_id: int
    entries_json: str  # one JSON list of runtime_context.inspect_report entries


class Shutdown(msgspec.Struct, tag=True):
    reason: str
    drain_timeout_s: float = 0.0  # how long in-flight requests may finish (launcher.shutdown_timeout_s)


class SamplingFields(msgspec.Struct):
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    min_p: float = 0.0
    repetition_penalty: float = 1.0
    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0
    seed: int | None = None
    max_tokens: int = 16
    stop_token_ids: list[int] = []
    ignore_eos: bool = False
    logprobs: int | None = None


class Generate(msgspec.Struct, tag=True):
    request_id: str
    reply_to: int  # tokenizer instance that owns the client connection
    prompt_ids: list[int]
    sampling: SamplingFields


class Abort(msgspec.Struct, tag=True):
    request_id: str


class TokenEvent(msgspec.Struct, array_like=True):
    request_id: str
    token_id: int  # -1 when the event carries no token (abort, rejection)
    logprob: float | None
    top_logprobs: list[tuple[int, float]] | None
    finish_reason: str | None  # stop | length | abort | error
    error: str | None = None  # set when the scheduler refused the request


class TokenBatch(msgspec.Struct, tag=True):
    events: list[TokenEvent]
    load: dict[str, int] = {}


class LoadReport(msgspec.Struct, tag=True):
    instance: int
    num_running: int
    num_waiting: int
    kv_usage: float
    finished: list[str] = []  # request ids that ended since the last report (the dp_controller forgets them)


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


ControlMsg = Ready | Heartbeat | InspectQuery | InspectReply | Shutdown
RequestMsg = Generate | Abort
ResultMsg = TokenBatch | LoadReport
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
