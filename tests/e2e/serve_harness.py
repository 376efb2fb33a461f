"""Start the real `serve` on a loopback port for end-to-end tests, and always clean it up."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import openai
import psutil
import yaml

from launcher.port_check import free_tcp_ports

SERVE = str(Path(sys.executable).with_name("serve"))


def free_port() -> int:
    return free_tcp_ports("127.0.0.1", 1)[0]


class ServeProcess:
    """`serve --config <tmp>/cfg.yaml` with output collected; `url` is set once it prints that it is ready."""

    def __init__(
        self,
        tmp_path: Path,
        config: dict,
        ready_timeout_s: float = 120,
        extra_args: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
    ):
        self.extra_env = env or {}
        self.port = free_port()
        config = {**config, "http": {"host": "127.0.0.1", "port": self.port, **config.get("http", {})}}
        tmp_path.mkdir(parents=True, exist_ok=True)
        self.config_path = tmp_path / "cfg.yaml"
        self.config_path.write_text(yaml.safe_dump(config))
        self.ready_timeout_s = ready_timeout_s
        self.extra_args = extra_args
        self.url = f"http://127.0.0.1:{self.port}"
        self.lines: list[str] = []
        self._ready = threading.Event()
        self.process: subprocess.Popen | None = None

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def start(self, wait: bool = True) -> ServeProcess:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ROLESERVE_")}
        env.update(self.extra_env)
        self.process = subprocess.Popen(
            [SERVE, "--config", str(self.config_path), *self.extra_args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
            start_new_session=True,  # its own process group: cleanup can reach every child
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        if wait:
            self.wait_ready()
        return self

    def _read(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)
            if "roleserve ready on" in line:
                self._ready.set()

    def openai_client(self, timeout_s: float = 60, api_key: str = "unused") -> openai.OpenAI:
        """The official client on this server's /v1, failing at once instead of retrying."""
        return openai.OpenAI(base_url=self.url + "/v1", api_key=api_key, max_retries=0, timeout=timeout_s)

    def wait_ready(self) -> None:
        deadline = time.monotonic() + self.ready_timeout_s
        while not self._ready.wait(0.1):
            if self.process.poll() is not None:
                raise AssertionError(
                    f"serve exited with {self.process.returncode} before ready:\n{self.output}"
                )
            if time.monotonic() > deadline:
                raise AssertionError(f"serve not ready within {self.ready_timeout_s}s:\n{self.output}")

    def children(self) -> list[psutil.Process]:
        try:
            return psutil.Process(self.process.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []

    def wait_exit(self, timeout_s: float = 60) -> int:
        return self.process.wait(timeout_s)

    def output_to_the_end(self, timeout_s: float = 60) -> str:
        """All output, once every process holding the pipe has exited: the server, its children and
        multiprocessing's resource tracker, which reports leaked shared memory when the server is gone."""
        self._reader.join(timeout_s)
        assert not self._reader.is_alive(), f"output still open {timeout_s}s after:\n{self.output}"
        return self.output

    def stop(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.process.pid, signal.SIGKILL)  # anything left in the group
        except ProcessLookupError:
            pass
        self.process.wait(10)

    def __enter__(self) -> ServeProcess:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
