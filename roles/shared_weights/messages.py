"""Messages of the weight-cache channel (scheduler or CLI <-> weight_cache_daemon), msgpack like all IPC."""

from __future__ import annotations

import msgspec

from roles.shared_weights.identity import ModelIdentity


class TensorEntry(msgspec.Struct, array_like=True):
    """Where one tensor lies in a segment."""

    name: str
    dtype: str  # torch dtype name, e.g. "float32", "int8", "int32", "uint8"
    shape: list[int]
    offset: int
    nbytes: int


class Ping(msgspec.Struct, tag=True):
    pass


class Pong(msgspec.Struct, tag=True):
    pid: int
    num_entries: int


class WeightQuery(msgspec.Struct, tag=True):
    identity: ModelIdentity


class WeightAnswer(msgspec.Struct, tag=True):
    identity: ModelIdentity
    segment: str = ""
    tensors: list[TensorEntry] = []
    shape: dict = {}  # ModelShape fields
    eos_token_ids: list[int] = []
    error: str | None = None


class CacheEntryInfo(msgspec.Struct):
    identity: ModelIdentity
    segment: str
    nbytes: int
    loaded_at: float
    load_seconds: float
    num_served: int


class ListEntries(msgspec.Struct, tag=True):
    pass


class EntryList(msgspec.Struct, tag=True):
    pid: int
    entries: list[CacheEntryInfo]


class DropEntries(msgspec.Struct, tag=True):
    key: str | None = None  # None drops every entry
    stop_daemon: bool = False


class Dropped(msgspec.Struct, tag=True):
    keys: list[str]


CacheMsg = Ping | Pong | WeightQuery | WeightAnswer | ListEntries | EntryList | DropEntries | Dropped
cache_encoder = msgspec.msgpack.Encoder()
cache_decoder = msgspec.msgpack.Decoder(CacheMsg)
