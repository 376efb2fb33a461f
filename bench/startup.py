"""Start-up and memory of `serve` with the default model, with and without the weight_cache_daemon.

    .venv/bin/python bench/startup.py [--quick] [--starts 5] [--reference-command "llama-server -m {gguf} --port {port} ..."]

Prints: the default config's start (deploy/configs/default.yaml as `make serve` runs it; the median of
--starts starts) and its whole-server PSS; cold start (no daemon), start with a private daemon, first and second start with a
persistent daemon (warm), scheduler restart to READY with and without the daemon, and the proportional
set size (PSS, psutil) of the whole server for dp_size 1 and 2 with and without the daemon, with ratios.
With --reference-command, the same start (median) and memory figures for another server ({port} and {gguf}, the
bundled model's file, are filled in; ready = its /health answers 200). Loopback only; every wait is
bounded. "Cold" means no daemon and no warm state; the OS file cache is not dropped.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import threading
import time
from statistics import median

import httpx
import yaml

SERVE = str(pathlib.Path(sys.executable).with_name("serve"))
ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.reference_server import bytecode_note, reference_server, tree_pss_mib  # noqa: E402
from launcher.port_check import free_tcp_ports  # noqa: E402


def free_port() -> int:
    return free_tcp_ports("127.0.0.1", 1)[0]


def complete(url: str) -> None:
    """One short completion: the server has served a request (and touched its model) before it is measured."""
    body = {"model": "smollm2", "prompt": "Hello", "max_tokens": 8, "temperature": 0}
    httpx.post(url + "/v1/completions", json=body, timeout=120).raise_for_status()


class Server:
    def __init__(self, config: dict, env: dict | None = None):
        self.port = free_port()
        config = {**config, "http": {"host": "127.0.0.1", "port": self.port}}
        path = pathlib.Path(tempfile.mkdtemp()) / "cfg.yaml"
        path.write_text(yaml.safe_dump(config))
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("ROLESERVE_")}
        full_env.update(env or {})
        self.started = time.monotonic()
        self.process = subprocess.Popen(
            [SERVE, "--config", str(path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=full_env,
            start_new_session=True,
        )
        self.lines: list[tuple[float, str]] = []
        self.ready_at: float | None = None
        threading.Thread(target=self._read, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.port}"

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.append((time.monotonic(), line))
            if "roleserve ready on" in line and self.ready_at is None:
                self.ready_at = time.monotonic()

    def wait_ready(self, timeout_s: float = 600) -> float:
        deadline = time.monotonic() + timeout_s
        while self.ready_at is None:
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("serve did not start:\n" + "".join(line for _, line in self.lines))
            time.sleep(0.05)
        return self.ready_at - self.started

    def complete(self) -> None:
        complete(self.url)

    def pss_mib(self) -> float:
        return tree_pss_mib(self.process.pid)

    def scheduler(self, instance: int = 0) -> dict:
        """The scheduler's entry of /roles: its pid, settings and facts."""
        processes = httpx.get(self.url + "/roles", timeout=60).json()["processes"]
        return next(p for p in processes if p["role"] == "scheduler" and p["instance"] == instance)

    def scheduler_pid(self, instance: int = 0) -> int:
        return self.scheduler(instance)["pid"]

    def kernels(self) -> dict:
        """The scheduler's kernels fact: the ISA path it runs, why, and the paths this CPU has."""
        return self.scheduler()["facts"]["kernels"][0]

    def restart_scheduler_seconds(self, instance: int = 0, timeout_s: float = 600) -> float:
        """SIGKILL scheduler[instance]; seconds until its new process is READY (an expert-parallel rank
        reports READY once it has joined the other ranks again)."""
        marker = len(self.lines)
        killed_at = time.monotonic()
        os.kill(self.scheduler_pid(instance), signal.SIGKILL)
        deadline = killed_at + timeout_s
        while time.monotonic() < deadline:
            for at, line in self.lines[marker:]:
                if f"scheduler[{instance}] ready" in line:
                    return at - killed_at
            time.sleep(0.02)
        raise SystemExit("the scheduler did not come back")

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)


def _reference_argv(command: str) -> tuple[list[str], str]:
    """--reference-command on a free port, with the bundled model's file: its argv and its URL."""
    from roles.model_files.model_path import resolve_model_path

    port = free_port()
    return command.format(port=port, gguf=resolve_model_path("smollm2")).split(), f"http://127.0.0.1:{port}"


def measure_reference(command: str, timeout_s: float = 120) -> dict:
    """Start another server, time until its /health answers 200, read its PSS after one completion."""
    argv, url = _reference_argv(command)
    with reference_server(argv, url, timeout_s) as (process, ready):
        complete(url)
        return {"start_s": ready, "pss_mib": tree_pss_mib(process.pid)}


def reference_ready_s(command: str, timeout_s: float = 120) -> float:
    """One more start of the other server: seconds until its /health answers 200."""
    argv, url = _reference_argv(command)
    with reference_server(argv, url, timeout_s) as (_, ready):
        return ready


def ready_s(config: dict) -> float:
    """One more start of ``config``: seconds to READY."""
    server = Server(config)
    try:
        return server.wait_ready()
    finally:
        server.stop()


def measure(config: dict, env: dict | None = None, restart: bool = False, instance: int = 0) -> dict:
    server = Server(config, env)
    try:
        result = {"start_s": server.wait_ready()}
        server.complete()
        result["pss_mib"] = server.pss_mib()
        if restart:
            result["restart_s"] = server.restart_scheduler_seconds(instance)
            server.complete()
        return result
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip the dp_size=2 memory runs")
    parser.add_argument(
        "--starts", type=int, default=5, help="starts of the default config (and the reference): the median"
    )
    parser.add_argument("--reference-command", default=None, help="another server to start, with {port}")
    parser.add_argument(
        "--moe-folder",
        default=None,
        help="an MoE folder (e.g. .cache/smollm2-moe-4x2 from bench/moe.py): also time an expert-parallel "
        "rank restart with and without the expert_backup",
    )
    args = parser.parse_args()

    print(bytecode_note())
    default = yaml.safe_load((ROOT / "deploy" / "configs" / "default.yaml").read_text())
    ours = measure(default)
    ours["start_s"] = median([ours["start_s"], *(ready_s(default) for _ in range(args.starts - 1))])
    print(
        f"{'default config (make serve)':<44} {'ready s':>8} {'PSS MiB':>8}   (ready: median of {args.starts})"
    )
    print(f"{'roleserve':<44} {ours['start_s']:8.2f} {ours['pss_mib']:8.0f}")
    if args.reference_command:
        theirs = measure_reference(args.reference_command)
        theirs["start_s"] = median(
            [
                theirs["start_s"],
                *(reference_ready_s(args.reference_command) for _ in range(args.starts - 1)),
            ]
        )
        print(f"{'reference':<44} {theirs['start_s']:8.2f} {theirs['pss_mib']:8.0f}")
        print(
            f"{'roleserve / reference':<44} {ours['start_s'] / theirs['start_s']:7.2f}x"
            f" {ours['pss_mib'] / theirs['pss_mib']:7.2f}x"
        )
    print()
    base = {"memory": {"kv_cache_tokens": 8192}, "schedule": {"max_running_requests": 8}}
    no_cache = {**base, "weight_cache": {"enabled": False}}
    cached = {**base, "weight_cache": {"enabled": True}}
    restarting = {"launcher": {"restart_policy": "on-failure", "max_restarts": 1}}

    cold = measure({**no_cache, **restarting}, restart=True)
    private = measure({**cached, **restarting}, restart=True)
    run_dir = tempfile.mkdtemp()
    env = {"XDG_RUNTIME_DIR": run_dir}
    persist = {**base, "weight_cache": {"enabled": True, "persist": True}}
    first = measure(persist, env)
    warm = measure(persist, env)
    subprocess.run(
        [SERVE, "cache", "drop", "--stop"], env={**os.environ, **env}, capture_output=True, timeout=60
    )

    print(f"{'start-up (to READY)':<44} {'seconds':>8}")
    print(f"{'cold, no daemon':<44} {cold['start_s']:8.1f}")
    print(f"{'with a private daemon':<44} {private['start_s']:8.1f}")
    print(f"{'persistent daemon, first serve':<44} {first['start_s']:8.1f}")
    print(
        f"{'persistent daemon, second serve (warm)':<44} {warm['start_s']:8.1f}   {cold['start_s'] / warm['start_s']:.1f}x faster than cold"
    )
    print(f"{'scheduler restart, no daemon':<44} {cold['restart_s']:8.1f}")
    print(
        f"{'scheduler restart, daemon':<44} {private['restart_s']:8.1f}   {cold['restart_s'] / private['restart_s']:.1f}x faster"
    )
    if args.moe_folder:
        expert_parallel_restarts(pathlib.Path(args.moe_folder), {**no_cache, **restarting})
    if args.quick:
        return
    rows = {
        ("no daemon", 1): cold["pss_mib"],
        ("daemon", 1): private["pss_mib"],
        ("no daemon", 2): measure({**no_cache, "parallel": {"dp_size": 2}})["pss_mib"],
        ("daemon", 2): measure({**cached, "parallel": {"dp_size": 2}})["pss_mib"],
    }
    print(f"\n{'whole-server PSS':<24} {'dp_size=1':>10} {'dp_size=2':>10} {'2 / 1':>7}")
    for mode in ("no daemon", "daemon"):
        one, two = rows[(mode, 1)], rows[(mode, 2)]
        print(f"{mode:<24} {one:8.0f} MiB {two:6.0f} MiB {two / one:6.2f}x")


def expert_parallel_restarts(folder: pathlib.Path, base: dict) -> None:
    """Rank 1 of ep_size 2 killed and restarted: its experts from the expert_backup or from disk."""
    config = {
        **base,
        "model": {"path": str(folder), "served_name": "smollm2"},
        "exec": {"weight_dtype": "exact"},
        "parallel": {"ep_size": 2},
    }
    from_disk = measure(config, restart=True, instance=1)
    backed = measure({**config, "expert_backup": {"enabled": True}}, restart=True, instance=1)
    print(f"\n{'expert-parallel rank restart (' + folder.name + ')':<44} {'seconds':>8}")
    print(f"{'experts from disk':<44} {from_disk['restart_s']:8.1f}")
    print(
        f"{'experts from the expert_backup':<44} {backed['restart_s']:8.1f}   "
        f"{from_disk['restart_s'] / backed['restart_s']:.1f}x faster"
    )


if __name__ == "__main__":
    main()
