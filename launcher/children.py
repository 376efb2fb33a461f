"""The launcher owns every child process: spawn, describe exits, and stop (terminate, bounded join, kill)."""

from __future__ import annotations

import multiprocessing
import signal
import weakref
from multiprocessing.process import BaseProcess

from launcher.preloaded_parent import preloaded_parent_pid, start_preloading
from roles.child_process import ChildSpec, child_main
from roles.endpoints import Endpoints
from roles.model_files import gguf_file
from runtime_context import ResolvedConfig


def describe_exit(exitcode: int | None) -> str:
    if exitcode is None:
        return "is still running"
    if exitcode >= 0:
        return f"exited with code {exitcode}"
    name = signal.Signals(-exitcode).name
    hint = ""
    if -exitcode == signal.SIGKILL:
        hint = (
            " (SIGKILL often means the kernel's out-of-memory killer: check `dmesg`, lower "
            "memory.kv_cache_memory_mb or serve a smaller model)"
        )
    return f"was killed by signal {name}{hint}"


def describe_child_exit(process) -> str:
    """How a child ended: a process by its exit code or signal, a ray actor by what Ray reported."""
    exit_description = getattr(process, "exit_description", None)  # launcher/ray_placement.ActorProcess
    return exit_description() if exit_description is not None else describe_exit(process.exitcode)


def stop_processes(processes: list[BaseProcess], timeout_s: float) -> None:
    """Terminate all, join within the timeout, kill what lingers. Safe to call twice."""
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(timeout_s)
    for process in processes:
        if process.is_alive():
            process.kill()
            process.join(5)


class ChildProcesses:
    def __init__(self, resolved: ResolvedConfig, endpoints: Endpoints, launcher_pid: int, placement=None):
        """placement: a launcher/ray_placement.RayPlacement when scheduler replicas run as ray actors."""
        self._spawn = multiprocessing.get_context("spawn")
        self._fork_preloaded = multiprocessing.get_context("forkserver")
        self.placement = placement
        self.resolved = resolved
        self.endpoints = endpoints
        self.launcher_pid = launcher_pid
        self.by_name: dict[str, tuple[ChildSpec, BaseProcess]] = {}
        self.num_restarts: dict[str, int] = {}
        self._all: list[BaseProcess] = []
        # Even if the launcher leaves through an unexpected exception, no child outlives it.
        weakref.finalize(self, stop_processes, self._all, 2.0)

    def start(self, spec: ChildSpec) -> BaseProcess:
        wire = self.resolved.for_projection(spec.projection).to_wire()
        if self.placement is not None and spec.role == "scheduler":
            process = self.placement.start(spec, wire, self.endpoints)
        else:
            if spec.preload:
                start_preloading()  # `serve` started it before resolving; in-process users start it here
                context, parent_pid = self._fork_preloaded, preloaded_parent_pid()
            else:
                context, parent_pid = self._spawn, self.launcher_pid
            process = context.Process(
                target=child_main,
                args=(spec, wire, self.endpoints, parent_pid, gguf_file.opened()),
                name=f"roleserve-{spec.name}",
                daemon=False,
            )
            process.start()
        self.by_name[spec.name] = (spec, process)
        self._all.append(process)
        return process

    def exited(self) -> list[tuple[ChildSpec, BaseProcess]]:
        return [(spec, p) for spec, p in self.by_name.values() if p.exitcode is not None]

    def alive(self, role: str | None = None) -> list[tuple[ChildSpec, BaseProcess]]:
        return [(s, p) for s, p in self.by_name.values() if p.is_alive() and (role is None or s.role == role)]

    def stop_all(self, timeout_s: float) -> None:
        stop_processes(self._all, timeout_s)
