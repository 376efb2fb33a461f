"""Start, stop and dump a recording on request (POST /admin/expert_distribution/{start,stop,dump}).

A dump is one JSON file per scheduler replica: the recorder's dump (see recorder.CountingRecorder.dump) plus
"instance" and "written_at" (unix seconds), named expert_distribution-<instance>-<unix ms>.json.
"""

from __future__ import annotations

import json
import os
import time

from roles.protocol import ExpertRecording, ExpertRecordingReply
from roles.scheduler.expert_stats.recorder import NoopRecorder, RecorderOff

ACTIONS = ("start", "stop", "dump")


def run_recording_command(
    recorder: NoopRecorder, message: ExpertRecording, instance: int, directory: str
) -> ExpertRecordingReply:
    if message.action not in ACTIONS:
        return ExpertRecordingReply(message.query_id, instance, error=f"unknown action {message.action!r}")
    try:
        if message.action == "start":
            recorder.start()
            return ExpertRecordingReply(message.query_id, instance)
        if message.action == "stop":
            recorder.stop()
            return ExpertRecordingReply(message.query_id, instance)
        dump = recorder.dump()
    except RecorderOff as error:
        return ExpertRecordingReply(message.query_id, instance, error=str(error))
    written_at = time.time()
    os.makedirs(directory, mode=0o700, exist_ok=True)
    path = os.path.join(directory, f"expert_distribution-{instance}-{int(written_at * 1000)}.json")
    with open(path, "w", encoding="utf-8") as file:
        json.dump({"instance": instance, "written_at": written_at, **dump}, file)
    return ExpertRecordingReply(message.query_id, instance, path=path)
