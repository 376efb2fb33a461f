"""The weight_cache_daemon: one shared copy for every scheduler, identical output, nothing left behind
(no segment, no resource tracker warning of leaked shared memory)."""

from __future__ import annotations

import os
import stat
import subprocess
import time

import httpx
from serve_harness import SERVE, ServeProcess

from conftest import tiny_config

BODY = {"model": "tiny", "prompt": "Hello world", "max_tokens": 16, "temperature": 0, "ignore_eos": True}


def segments(prefix: str = "roleserve-wc") -> list[str]:
    return sorted(name for name in os.listdir("/dev/shm") if name.startswith(prefix))


def complete(server: ServeProcess) -> str:
    return httpx.post(server.url + "/v1/completions", json=BODY, timeout=60).json()["choices"][0]["text"]


def test_two_schedulers_share_one_owner_only_copy_and_shutdown_frees_it(tiny_model, tmp_path):
    with ServeProcess(tmp_path / "off", tiny_config(tiny_model, weight_cache={"enabled": False})) as plain:
        expected = complete(plain)
    before = set(segments())
    config = tiny_config(tiny_model, parallel={"dp_size": 2}, weight_cache={"enabled": True})
    with ServeProcess(tmp_path / "on", config) as server:
        assert complete(server) == expected
        assert complete(server) == expected  # round robin: the other replica too
        created = sorted(set(segments()) - before)
        assert len(created) == 1
        assert stat.S_IMODE(os.stat(f"/dev/shm/{created[0]}").st_mode) == 0o600
        assert server.output.count("mapped from") == 2
        server.process.terminate()
        assert server.wait_exit(60) == 0
        assert "leaked shared_memory" not in server.output_to_the_end()
    assert set(segments()) == before


def run_cli(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([SERVE, *args], capture_output=True, text=True, timeout=60, env=env)


def test_persistent_daemon_outlives_serve_and_is_listed_and_dropped(tiny_model, tmp_path):
    run_dir = tmp_path / "xdg"
    run_dir.mkdir(mode=0o700)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("ROLESERVE_")},
        "XDG_RUNTIME_DIR": str(run_dir),
    }
    config = tiny_config(tiny_model, weight_cache={"enabled": True, "persist": True})
    try:
        for attempt in range(2):
            with ServeProcess(
                tmp_path / f"run{attempt}", config, env={"XDG_RUNTIME_DIR": str(run_dir)}
            ) as server:
                complete(server)
            listing = run_cli(env, "cache", "ls")
            assert "1 entry" in listing.stdout, listing.stdout + listing.stderr
            assert f"served {attempt + 1:>3}x" in listing.stdout
        assert len(segments("roleserve-wcp-")) == 1
    finally:
        dropped = run_cli(env, "cache", "drop", "--stop")
    assert "dropped 1 entry" in dropped.stdout and "the daemon stops" in dropped.stdout
    assert segments("roleserve-wcp-") == []
    deadline = time.monotonic() + 60
    while "no persistent weight_cache_daemon is running" not in run_cli(env, "cache", "ls").stdout:
        assert time.monotonic() < deadline, "the daemon did not stop"
        time.sleep(0.2)
