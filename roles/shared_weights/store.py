"""The daemon's entries: each identity loaded and converted once, held in one shared-memory segment.

A store may keep only some tensors of each model (``select``, by name): the expert_backup keeps the
experts of MoE layers."""

from __future__ import annotations

import ctypes
import dataclasses
import gc
import logging
import threading
import time
from collections.abc import Callable

from roles.shared_weights.identity import ModelIdentity, identity_of
from roles.shared_weights.messages import CacheEntryInfo, WeightAnswer
from roles.shared_weights.segment import write_segment

log = logging.getLogger("roleserve.weight_cache")


@dataclasses.dataclass
class Entry:
    answer: WeightAnswer
    segment: object  # multiprocessing.shared_memory.SharedMemory, kept open while the entry lives
    nbytes: int
    loaded_at: float
    load_seconds: float
    num_served: int = 0

    def info(self) -> CacheEntryInfo:
        return CacheEntryInfo(
            self.answer.identity,
            self.answer.segment,
            self.nbytes,
            self.loaded_at,
            self.load_seconds,
            self.num_served,
        )


TensorSelection = Callable[[str], bool]


def load_answer(
    identity: ModelIdentity,
    segment_prefix: str,
    select: TensorSelection | None = None,
    max_bytes: int | None = None,
) -> tuple[WeightAnswer, object, int]:
    """Open the checkpoint once, convert it to the execution format, and copy the tensors (those ``select``
    keeps) into a fresh segment; ValueError when they need more than ``max_bytes``."""
    from roles.weight_format.execution_format import load_execution_weights

    converted = load_execution_weights(identity.path, identity.weight_dtype)
    state = converted.state if select is None else {k: v for k, v in converted.state.items() if select(k)}
    needed = sum(t.numel() * t.element_size() for t in state.values())
    if max_bytes is not None and needed > max_bytes:
        raise ValueError(
            f"the tensors need {needed / 2**20:.0f} MiB, more than the {max_bytes / 2**20:.0f} MiB allowed"
        )
    name = f"{segment_prefix}{identity.key}"
    segment, entries = write_segment(name, state)
    eos = sorted(converted.eos_token_ids)
    answer = WeightAnswer(identity, name, entries, dataclasses.asdict(converted.shape), eos)
    return answer, segment, sum(e.nbytes for e in entries)


def _return_freed_memory() -> None:
    """Hand the heap that held the converted tensors back to the kernel, so the daemon keeps one copy only."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


class WeightStore:
    """Thread-safe: loads run in a worker thread so the daemon keeps answering pings and lists."""

    def __init__(
        self,
        segment_prefix: str,
        select: TensorSelection | None = None,
        max_bytes: int | None = None,
        owner: str = "weight_cache_daemon",
    ):
        """owner: the role named in errors; select, max_bytes: see load_answer."""
        self.segment_prefix = segment_prefix
        self.owner = owner
        self.select = select
        self.max_bytes = max_bytes
        self.entries: dict[str, Entry] = {}
        self.loading: dict[str, threading.Thread] = {}
        self.failures: dict[str, str] = {}
        self.closed = False  # after drop(None) at exit: a load that ends later unlinks its segment at once
        self.lock = threading.Lock()

    def check_current(self, identity: ModelIdentity) -> str | None:
        """None when the file on disk is still what the identity describes; else why not."""
        try:
            now = identity_of(identity.path, identity.weight_dtype)
        except OSError as error:
            return f"cannot stat {identity.path}: {error}"
        if now != identity:
            return f"{identity.path} changed on disk (size/mtime differ from the request); ask again"
        return None

    def lookup(self, identity: ModelIdentity) -> WeightAnswer | None:
        with self.lock:
            entry = self.entries.get(identity.key)
            if entry is not None:
                entry.num_served += 1
                return entry.answer
            failure = self.failures.pop(identity.key, None)
        if failure is not None:
            return WeightAnswer(identity, error=failure)
        return None

    def start_load(self, identity: ModelIdentity, on_done) -> None:
        with self.lock:
            if identity.key in self.loading or identity.key in self.entries:
                return
            thread = threading.Thread(target=self._load, args=(identity, on_done), daemon=True)
            self.loading[identity.key] = thread
        thread.start()

    def _load(self, identity: ModelIdentity, on_done) -> None:
        started = time.monotonic()
        try:
            answer, segment, nbytes = load_answer(identity, self.segment_prefix, self.select, self.max_bytes)
            _return_freed_memory()  # the converted tensors were copied into the segment and dropped
        except Exception as error:  # reported to every waiting scheduler, which then falls back or fails
            log.error("loading %s failed: %s", identity.path, error)
            with self.lock:
                self.failures[identity.key] = (
                    f"{self.segment_prefix.strip('-')} could not load {identity.path}: {error}"
                )
                self.loading.pop(identity.key, None)
        else:
            seconds = time.monotonic() - started
            log.info(
                "cached %s (%s) in %.1fs: %.1f MiB in %s",
                identity.path,
                identity.weight_dtype,
                seconds,
                nbytes / 2**20,
                answer.segment,
            )
            with self.lock:
                self.loading.pop(identity.key, None)
                if self.closed:
                    segment.close()
                    segment.unlink()
                else:
                    self.entries[identity.key] = Entry(answer, segment, nbytes, time.time(), seconds)
        on_done(identity)

    def close(self) -> None:
        """Unlink every segment, now and of any load still running."""
        with self.lock:
            self.closed = True
        self.drop(None)

    def drop(self, key: str | None) -> list[str]:
        with self.lock:
            keys = (
                list(self.entries)
                if key is None
                else [k for k in self.entries if k == key or k.startswith(key)]
            )
            for k in keys:
                entry = self.entries.pop(k)
                entry.segment.close()
                entry.segment.unlink()  # mappings that schedulers hold stay valid until they unmap
        return keys

    def infos(self) -> list[CacheEntryInfo]:
        with self.lock:
            return [entry.info() for entry in self.entries.values()]
