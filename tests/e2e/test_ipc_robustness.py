"""Malformed frames on a role's socket are dropped and counted; the server keeps serving."""

from __future__ import annotations

import httpx
import msgspec
import zmq
from serve_harness import ServeProcess
from server_probes import metrics, series

from conftest import tiny_config


def test_garbage_frames_are_dropped_counted_and_harmless(tiny_model, tmp_path):
    runtime_parent = tmp_path / "run"
    config = tiny_config(tiny_model, launcher={"runtime_dir": str(runtime_parent)})
    with ServeProcess(tmp_path, config) as server:
        [runtime_dir] = list(runtime_parent.iterdir())
        assert runtime_dir.stat().st_mode & 0o777 == 0o700
        context = zmq.Context()
        push = context.socket(zmq.PUSH)
        push.setsockopt(zmq.LINGER, 2000)
        push.connect(f"ipc://{runtime_dir}/scheduler-0.requests")
        for frame in (b"\xc1garbage", msgspec.msgpack.encode({"type": "Generate"}), b""):
            push.send(frame)
        push.close()
        context.term()
        body = {"model": "tiny", "prompt": "Hello", "max_tokens": 4, "temperature": 0}
        assert httpx.post(server.url + "/v1/completions", json=body, timeout=30).status_code == 200
        dropped = series("roleserve_scheduler_dropped_frames_total", role="scheduler", instance=0)
        assert metrics(server)[dropped] == 3


def test_two_tokenizer_workers_share_one_port(tiny_model, tmp_path):
    with ServeProcess(tmp_path, tiny_config(tiny_model, tokenizer={"workers": 2})) as server:
        body = {"model": "tiny", "prompt": "Hello", "max_tokens": 4, "temperature": 0}
        texts = {
            httpx.post(server.url + "/v1/completions", json=body, timeout=30).json()["choices"][0]["text"]
            for _ in range(6)
        }
        assert len(texts) == 1
        processes = httpx.get(server.url + "/roles", timeout=30).json()["processes"]
        assert sorted(p["instance"] for p in processes if p["role"] == "tokenizer") == [0, 1]
