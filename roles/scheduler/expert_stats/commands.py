"""Start, stop and dump a recording on request (POST /admin/expert_distribution/{start,stop,dump}).

A dump is one JSON file per scheduler replica: the recorder's dump (see recorder.CountingRecorder.dump) plus
"instance" and "written_at" (unix seconds), named expert_distribution-<instance>-<unix ms>.json.

Expert-parallel ranks record their own tokens' routing; a dump gathers every rank's on rank 0, which writes
one file for the group (``merge_rank_dumps``: counts summed, per-token routes tagged with their rank, plus
"ranks": how many), named expert_distribution-ep-<unix ms>.json. The other ranks answer without a path.
"""

from __future__ import annotations

import json
import os
import time

from roles.protocol import ExpertCommand, ExpertCommandReply
from roles.scheduler.expert_stats.noop_recorder import NoopRecorder, RecorderOff

ACTIONS = ("start", "stop", "dump")


def apply_recording_command(recorder: NoopRecorder, action: str) -> dict | None:
    """Start or stop (-> None) or dump (-> the recorder's dump); RecorderOff or ValueError when it cannot."""
    if action not in ACTIONS:
        raise ValueError(f"unknown action {action!r}")
    if action == "start":
        recorder.start()
    elif action == "stop":
        recorder.stop()
    else:
        return recorder.dump()
    return None


def write_dump(directory: str, name: str, content: dict) -> str:
    """content with "written_at", as expert_distribution-<name>-<unix ms>.json in directory; its path."""
    written_at = time.time()
    os.makedirs(directory, mode=0o700, exist_ok=True)
    path = os.path.join(directory, f"expert_distribution-{name}-{int(written_at * 1000)}.json")
    with open(path, "w", encoding="utf-8") as file:
        json.dump({**content, "written_at": written_at}, file)
    return path


def run_recording_command(
    recorder: NoopRecorder, message: ExpertCommand, instance: int, directory: str
) -> ExpertCommandReply:
    try:
        dump = apply_recording_command(recorder, message.action)
    except (RecorderOff, ValueError) as error:
        return ExpertCommandReply(message.query_id, instance, error=str(error))
    if dump is None:
        return ExpertCommandReply(message.query_id, instance)
    path = write_dump(directory, str(instance), {"instance": instance, **dump})
    return ExpertCommandReply(message.query_id, instance, path=path)


def _sum_tables(tables: list[list[list[int]]]) -> list[list[int]]:
    return [[sum(column) for column in zip(*rows, strict=True)] for rows in zip(*tables, strict=True)]


def merge_rank_dumps(dumps: list[dict]) -> dict:
    """The dumps of the ranks of one group (rank order) as one: the ranks recorded the same passes (they
    step together), so counts add up pass by pass."""
    first = dumps[0]
    if any(dump["pass_ids"] != first["pass_ids"] for dump in dumps):
        raise ValueError("the ranks recorded different passes")
    merged = {
        **first,
        "ranks": len(dumps),
        "logical_counts": _sum_tables([d["logical_counts"] for d in dumps]),
    }
    if "per_pass" in first:
        merged["per_pass"] = [
            {
                "pass_id": records[0]["pass_id"],
                "logical_counts": _sum_tables([r["logical_counts"] for r in records]),
            }
            for records in zip(*(dump["per_pass"] for dump in dumps), strict=True)
        ]
    if "per_token" in first:
        merged["per_token"] = [
            {"rank": rank, **route} for rank, dump in enumerate(dumps) for route in dump["per_token"]
        ]
    return merged
