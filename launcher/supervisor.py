"""`serve`: publish as launcher, spawn every role, wait for READY, supervise, shut down cleanly."""

from __future__ import annotations

import logging
import os
import signal
import sys
import time

import zmq

from launcher.children import ChildProcesses, describe_child_exit
from launcher.inspect_gather import InspectGatherer
from launcher.liveness import Liveness
from launcher.port_check import http_port_problem
from launcher.role_list import LAUNCHER, ROLES
from launcher.runtime_dir import make_metrics_dir, make_runtime_dir, remove_runtime_dir
from launcher.topology import child_specs, endpoints_for, num_schedulers
from roles.child_process import ChildSpec
from roles.curve import stop_authenticator
from roles.heartbeat import BEAT_SUFFIX
from roles.protocol import (
    FrameCounter,
    Heartbeat,
    InspectQuery,
    InspectReply,
    Ready,
    RoleFailed,
    RoleHealth,
    Shutdown,
    control_decoder,
    encode,
)
from roles.shared_weights.asking import WeightCacheUnavailable
from roles.sockets import bind
from roles.startup_phases import StartupPhases
from runtime_context import (
    EXIT_CONFIG_ERROR,
    ConfigError,
    ResolvedConfig,
    get_http,
    get_launcher,
    get_observability,
    get_parallel,
    get_weight_cache,
    publish,
)

log = logging.getLogger("roleserve.launcher")


class StartupFailed(Exception):
    pass


class Supervisor:
    def __init__(self, resolved: ResolvedConfig):
        self.resolved = resolved
        self.settings = get_launcher()
        persistent = None
        cache = get_weight_cache()
        if cache.enabled and cache.persist:  # before the runtime dir: a refusal here leaves nothing behind
            from roles.weight_cache.persistent import ensure_daemon

            daemon_record = resolved.for_projection(ROLES.named("weight_cache_daemon").projection)
            persistent = ensure_daemon(daemon_record.to_wire(), timeout_s=self.settings.startup_timeout_s)
        self.placement = None
        parallel = get_parallel()
        if parallel.backend == "ray":  # before the runtime dir: a refusal here leaves nothing behind
            from launcher.ray_loopback import keep_ray_on_loopback

            keep_ray_on_loopback(parallel.bind_host)
            from launcher.ray_placement import RayPlacement

            self.placement = RayPlacement(
                parallel.ray_address,
                parallel.bind_host,
                num_schedulers(),
                parallel.ray_cpus_per_replica,
                parallel.ray_placement,
                timeout_s=self.settings.startup_timeout_s,
            )
        self.runtime_dir = make_runtime_dir(self.settings.runtime_dir)
        self.endpoints = endpoints_for(self.runtime_dir, persistent)
        make_metrics_dir(self.endpoints.metrics_dir)
        self.ep_store = None  # with ray actors as expert-parallel ranks: where they meet
        if self.endpoints.tcp is not None and self.endpoints.tcp.ep_store is not None:
            from launcher.ep_store import host_ep_store

            self.ep_store = host_ep_store(self.endpoints.tcp.host, self.endpoints.tcp.ep_store)
        self.zmq_context = zmq.Context()
        self.control = self.zmq_context.socket(zmq.ROUTER)
        self.control.setsockopt(zmq.LINGER, 0)
        bind(self.control, self.endpoints.control, self.endpoints.curve)
        self.children = ChildProcesses(resolved, self.endpoints, os.getpid(), self.placement)
        self.gatherer = InspectGatherer(self.control)
        self.frames = FrameCounter()
        self.ready: dict[str, Ready] = {}
        self.spawned_at: dict[str, float] = {}  # monotonic, per child name
        self.liveness = Liveness(
            self.settings.late_after_s, self.settings.heartbeat_timeout_s, self.settings.stall_timeout_s
        )
        self.health_sent: list[str] | None = None  # the RoleHealth the fronts were last sent
        self.stop_reason: str | None = None

    # -- control channel ----------------------------------------------------------------------------
    def poll_control(self, timeout_ms: int) -> None:
        if not self.control.poll(timeout_ms):
            self.gatherer.tick()
            return
        while self.control.poll(0):
            parts = self.control.recv_multipart()
            # A child's heartbeat thread speaks on its own socket (roles/heartbeat.py), named after the child.
            name = parts[0].decode(errors="replace").removesuffix(BEAT_SUFFIX)
            if len(parts) != 2 or name not in self.children.by_name:  # not one of our children's dealers
                self.frames.drop()
                continue
            sender, frame = parts
            message = self.frames.decode(control_decoder, frame)
            self.liveness.heard(name, message)
            if isinstance(message, Ready):
                self.on_ready(name, message)
            elif isinstance(message, InspectQuery):
                self.gatherer.start(sender, message, [name.encode() for name in self.ready])
            elif isinstance(message, InspectReply):
                self.gatherer.on_reply(sender, message)
            elif isinstance(message, Heartbeat):
                pass  # liveness and progress: recorded above
        self.gatherer.tick()

    def on_ready(self, name: str, message: Ready) -> None:
        if message.fingerprint != self.resolved.fingerprint:
            raise StartupFailed(
                f"{name} (pid {message.pid}) runs config fingerprint {message.fingerprint[:16]} but the launcher "
                f"resolved {self.resolved.fingerprint[:16]}: refusing to serve with mixed configuration"
            )
        self.ready[name] = message
        self.liveness.heard(name)
        log.info("%s ready (pid %d)", name, message.pid)
        if name in self.spawned_at:
            log.debug(
                "%s start-up: READY %.3f s after the launcher spawned it",
                name,
                time.monotonic() - self.spawned_at[name],
            )
        if message.role == "tokenizer":
            self.health_sent = None  # a new front starts unhealthy until told

    # -- lifecycle ----------------------------------------------------------------------------------
    def start(self, specs: list[ChildSpec]) -> None:
        """Spawn every child, then wait until each reported READY with the launcher's fingerprint."""
        # Spawned roles first: starting a preloaded role waits until the preloaded parent has finished its
        # imports (it reports the forked pid only then), and the spawned ones import meanwhile.
        for spec in sorted(specs, key=lambda spec: spec.preload):
            self.spawned_at[spec.name] = time.monotonic()
            self.children.start(spec)
        timeout = self.settings.startup_timeout_s
        deadline = time.monotonic() + timeout
        next_progress = time.monotonic() + 5
        while len(self.ready) < len(specs):
            if self.stop_reason:
                raise StartupFailed(f"startup interrupted ({self.stop_reason})")
            for spec, process in self.children.exited():
                raise StartupFailed(
                    f"{spec.name} (pid {process.pid}) {describe_child_exit(process)} during startup"
                )
            now = time.monotonic()
            missing = [s.name for s in specs if s.name not in self.ready]
            if now >= deadline:
                raise StartupFailed(
                    f"not every role reported READY within launcher.startup_timeout_s={timeout:g}s; still missing: "
                    f"{', '.join(missing)} (raise launcher.startup_timeout_s if the model needs longer to load)"
                )
            if now >= next_progress:
                print(
                    f"roleserve: waiting for {', '.join(missing)} ({now - deadline + timeout:.0f}s)",
                    file=sys.stderr,
                )
                next_progress = now + 5
            self.poll_control(100)
            self.report_health()
        self.report_health()

    def supervise(self) -> int:
        while self.stop_reason is None:
            self.poll_control(100)
            if self.stop_reason is not None:
                # A stop signal came during the poll. Sent to the whole process group (a terminal's
                # kill, systemd's default), it reached the children too: one that exited with it is part of
                # the stop, not a failure to report.
                break
            self.report_health()
            for spec, process in self.children.exited():
                if not self.on_failure(
                    spec, f"{spec.name} (pid {process.pid}) {describe_child_exit(process)}"
                ):
                    return 1
            for name, why in self.liveness.hung(list(self.ready)):
                spec, process = self.children.by_name[name]
                process.kill()  # SIGKILL: a stopped process cannot act on anything gentler
                process.join(5)
                if not self.on_failure(spec, f"{spec.name} (pid {process.pid}) {why}"):
                    return 1
        return 0

    def unavailable(self) -> list[str]:
        """The children requests wait on that are down (not ready) or late (silent past launcher.late_after_s)."""
        names = []
        for spec, _ in self.children.by_name.values():
            if not spec.serves_requests:
                continue
            if spec.name not in self.ready:
                names.append(f"{spec.name} (down)")
            elif self.liveness.is_late(spec.name):
                names.append(f"{spec.name} (late)")
        return names

    def report_health(self) -> None:
        """Tell every front when the set of unavailable children changes (and a front that just started)."""
        unavailable = self.unavailable()
        if unavailable == self.health_sent:
            return
        if self.health_sent is not None:
            was = set(self.health_sent)
            for name in unavailable:
                if name not in was and name.endswith("(late)"):
                    log.warning(
                        "%s sent no heartbeat for %g s (launcher.late_after_s): /health answers 503 until it "
                        "is heard again",
                        name.removesuffix(" (late)"),
                        self.settings.late_after_s,
                    )
            for name in self.health_sent:
                if name not in unavailable and name.endswith("(late)"):
                    log.warning("%s is heard again", name.removesuffix(" (late)"))
        self.tell_fronts(RoleHealth(unavailable))
        self.health_sent = unavailable

    def tell_fronts(self, message) -> None:
        for spec, _ in self.children.alive("tokenizer"):
            if spec.name in self.ready:
                self.send(spec, message)

    def on_failure(self, spec: ChildSpec, what: str) -> bool:
        """A child died or hung (`what` says which): restart it under the policy, or say why everything stops.

        True when supervision goes on (it was restarted), False when the server must stop."""
        policy, max_restarts = self.settings.restart_policy, self.settings.max_restarts
        self.ready.pop(spec.name, None)
        self.liveness.forget(spec.name)
        if spec.serves_requests:  # its requests cannot finish: the fronts answer them now, naming it
            self.tell_fronts(RoleFailed(spec.name, what))
            self.report_health()  # it is down: new requests are refused from now on
        restarts = self.children.num_restarts.get(spec.name, 0)
        if spec.role == "scheduler" and self.endpoints.ep_size > 1:
            # The other ranks keep their requests and wait for it: it rejoins their group when restarted.
            what += f"; it was expert-parallel rank {spec.instance} of {self.endpoints.ep_size}"
            # The first rank seen gone may have left because another died: every rank gone is named.
            what += "".join(
                f"; also gone: {s.name} (pid {p.pid}) {describe_child_exit(p)}"
                for s, p in self.children.exited()
                if s.role == "scheduler" and s.name != spec.name
            )
        if policy == "on-failure" and restarts < max_restarts:
            self.children.num_restarts[spec.name] = restarts + 1
            print(f"roleserve: {what}; restarting it ({restarts + 1}/{max_restarts})", file=sys.stderr)
            self.spawned_at[spec.name] = time.monotonic()
            self.children.start(spec)
            return True
        detail = "launcher.restart_policy: never" if policy == "never" else f"{max_restarts} restarts used"
        print(f"roleserve: {what}; shutting everything down ({detail})", file=sys.stderr)
        return False

    def shutdown(self) -> None:
        drain = self.settings.shutdown_timeout_s
        fronts = [(s, p) for s, p in self.children.alive("tokenizer")]
        for spec, _ in fronts:
            self.send(spec, Shutdown(self.stop_reason or "stop", drain))
        deadline = time.monotonic() + drain + 5
        while any(p.is_alive() for _, p in fronts) and time.monotonic() < deadline:
            self.poll_control(50)
        for spec, _ in self.children.alive():
            self.send(spec, Shutdown(self.stop_reason or "stop", 0))
        self.children.stop_all(timeout_s=5)
        if self.placement is not None:
            self.placement.close()
        self.control.close(0)
        stop_authenticator(self.zmq_context)
        self.zmq_context.term()
        remove_runtime_dir(self.runtime_dir)

    def send(self, spec: ChildSpec, message) -> None:
        try:
            self.control.send_multipart([spec.name.encode(), encode(message)], zmq.NOBLOCK)
        except zmq.ZMQError:
            pass  # a child that is gone cannot be told; stop_all handles it


def run_server(resolved: ResolvedConfig, startup: StartupPhases | None = None) -> int:
    """startup: the launcher's phases so far (the CLI's), continued here and logged at debug once every role
    is READY."""
    startup = startup or StartupPhases()
    publish(resolved, role="launcher", projection=LAUNCHER.projection)
    logging.basicConfig(
        level=get_observability().log_level.upper(), format="%(asctime)s launcher %(levelname)s: %(message)s"
    )
    taken = http_port_problem(resolved)
    if taken is not None:
        print(ConfigError([taken]).render(), file=sys.stderr)
        return EXIT_CONFIG_ERROR
    startup.mark("check the port")
    try:
        supervisor = Supervisor(resolved)
    except WeightCacheUnavailable as error:  # weight_cache.persist: the daemon's dir or start failed
        print(f"roleserve: weight_cache.persist: {error}", file=sys.stderr)
        return 1
    except (ConnectionError, StartupFailed) as error:  # parallel.backend ray: no cluster, or no room in it
        print(f"roleserve: parallel.backend ray: {error}", file=sys.stderr)
        return 1

    def on_signal(signum, frame) -> None:
        supervisor.stop_reason = signal.Signals(signum).name

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    http = get_http()
    code = 0
    try:
        startup.mark("prepare the runtime dir and sockets")
        supervisor.start(child_specs(supervisor.endpoints))
        startup.mark("spawn every role and wait for READY")
        startup.report("launcher")
        print(
            f"roleserve ready on http://{http.host}:{http.port} (config fingerprint {resolved.fingerprint[:16]})",
            flush=True,
        )
        code = supervisor.supervise()
    except StartupFailed as error:
        print(f"roleserve: {error}", file=sys.stderr)
        code = 1
    finally:
        supervisor.shutdown()
    return code
