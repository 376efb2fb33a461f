"""`serve cache ls` / `serve cache drop`: the persistent weight_cache_daemon's entries."""

from __future__ import annotations

import sys
import time

import zmq

from roles.shared_weights.asking import WeightCacheUnavailable, ask
from roles.shared_weights.messages import DropEntries, Dropped, EntryList, ListEntries
from roles.shared_weights.persistent_daemon import daemon_address, is_running


def cache_ls() -> int:
    context = zmq.Context.instance()
    try:
        if not is_running(context):
            print("no persistent weight_cache_daemon is running (weight_cache.persist: true starts one)")
            return 0
        answer = ask(context, daemon_address(), ListEntries(), timeout_s=10)
    except WeightCacheUnavailable as error:
        print(f"serve cache ls: {error}", file=sys.stderr)
        return 1
    assert isinstance(answer, EntryList)
    print(
        f"weight_cache_daemon pid {answer.pid} at {daemon_address()}: {len(answer.entries)} entr"
        f"{'y' if len(answer.entries) == 1 else 'ies'}"
    )
    for entry in answer.entries:
        identity = entry.identity
        age = time.time() - entry.loaded_at
        print(
            f"  {identity.key}  {identity.weight_dtype:<5} {entry.nbytes / 2**20:8.1f} MiB  served {entry.num_served:>3}x"
            f"  loaded {age:6.0f}s ago in {entry.load_seconds:.1f}s  {identity.path}"
        )
    return 0


def cache_drop(key: str | None, stop: bool) -> int:
    context = zmq.Context.instance()
    try:
        if not is_running(context):
            print("no persistent weight_cache_daemon is running")
            return 0
        answer = ask(context, daemon_address(), DropEntries(key, stop), timeout_s=10)
    except WeightCacheUnavailable as error:
        print(f"serve cache drop: {error}", file=sys.stderr)
        return 1
    assert isinstance(answer, Dropped)
    print(
        f"dropped {len(answer.keys)} entr{'y' if len(answer.keys) == 1 else 'ies'}: {', '.join(answer.keys) or '-'}"
        + ("; the daemon stops" if stop else "")
    )
    return 0 if answer.keys or key is None else 1
