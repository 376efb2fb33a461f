"""Where every socket of one server lives: ipc:// paths inside the launcher's private runtime dir, and with
parallel.backend ray the TCP routes scheduler actors reach on the launcher's machine.

Derived from (runtime_dir, topology, tcp routes), never stored twice; passed to every child by the launcher.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from roles.curve import CurveKeys


@dataclass(frozen=True)
class TcpRoutes:
    """The sockets a scheduler actor uses, all bound on the launcher's machine at `host` (CURVE servers), so
    an actor anywhere in the cluster only ever connects: control, the tokenizers' results, the
    dp_controller's load reports, and each replica's requests (sent by the dp_controller)."""

    host: str
    control: int
    dp_load: int
    tokenizer_results: tuple[int, ...]  # one port per tokenizer
    scheduler_requests: tuple[int, ...]  # one port per scheduler replica
    keys: CurveKeys
    ep_store: int | None = None  # the launcher's TCPStore where expert-parallel ranks meet (ep_size > 1)

    def address(self, port: int) -> str:
        return f"tcp://{self.host}:{port}"


@dataclass(frozen=True)
class Endpoints:
    runtime_dir: str
    num_tokenizers: int
    dp_size: int  # scheduler replicas; with expert parallelism, its ranks
    num_encoders: int = 0  # 0: /v1/embeddings is not served
    ep_size: int = 1  # expert-parallel ranks among the schedulers (1: none)
    weight_cache: str | None = None  # the weight_cache_daemon's address; None: schedulers load from disk
    expert_backup: str | None = None  # the expert_backup's address; None: ranks read experts from disk
    tcp: TcpRoutes | None = None  # parallel.backend ray: scheduler replicas are actors reached over TCP

    def _ipc(self, name: str) -> str:
        return f"ipc://{self.runtime_dir}/{name}"

    @property
    def private_weight_cache(self) -> str:
        """The daemon's address when it runs as a child of this server (not persistent)."""
        return self._ipc("weight_cache")

    @property
    def curve(self) -> CurveKeys | None:
        return self.tcp.keys if self.tcp else None

    def for_actor(self) -> Endpoints:
        """What a scheduler actor receives: it only connects, so no CURVE server secret."""
        assert self.tcp is not None
        return replace(self, tcp=replace(self.tcp, keys=self.tcp.keys.for_clients()))

    @property
    def schedulers_bind_requests(self) -> bool:
        """Local replicas bind their request socket; actors connect to one the dp_controller binds."""
        return self.tcp is None

    @property
    def has_dp_controller(self) -> bool:
        """Replicas to choose from, or actors: every request then passes the dp_controller."""
        return self.dp_size > 1 or self.tcp is not None

    @property
    def control(self) -> str:
        return self.tcp.address(self.tcp.control) if self.tcp else self._ipc("control")

    def scheduler_requests(self, instance: int) -> str:
        if self.tcp:
            return self.tcp.address(self.tcp.scheduler_requests[instance])
        return self._ipc(f"scheduler-{instance}.requests")

    def tokenizer_results(self, instance: int) -> str:
        if self.tcp:
            return self.tcp.address(self.tcp.tokenizer_results[instance])
        return self._ipc(f"tokenizer-{instance}.results")

    def encoder_requests(self, instance: int) -> str:
        return self._ipc(f"encoder-{instance}.requests")

    def tokenizer_embeddings(self, instance: int) -> str:
        return self._ipc(f"tokenizer-{instance}.embeddings")

    @property
    def dp_requests(self) -> str:
        return self._ipc("dp_controller.requests")

    @property
    def dp_load(self) -> str:
        return self.tcp.address(self.tcp.dp_load) if self.tcp else self._ipc("dp_controller.load")

    @property
    def metrics_dir(self) -> str:
        """Where the tokenizer workers record their Prometheus metrics (prometheus_client's multiprocess
        files), so a scrape of any worker shows them all; the launcher creates it empty."""
        return f"{self.runtime_dir}/prometheus"

    @property
    def ep_rendezvous(self) -> str:
        """The file through which expert-parallel ranks find each other (a torch.distributed FileStore)."""
        return f"{self.runtime_dir}/expert_parallel.store"

    @property
    def ep_placement(self) -> str:
        """The current expert placement, written by rank 0 after each rebalance: a restarted rank loads it."""
        return f"{self.runtime_dir}/expert_parallel.placement"

    @property
    def ep_progress(self) -> str:
        """Shared memory where each expert-parallel rank counts the collectives it has entered."""
        return f"{self.runtime_dir}/expert_parallel.progress"

    @property
    def request_entry(self) -> str:
        """Where tokenizers send Generate/Abort: the dp_controller when there are replicas to choose from."""
        return self.dp_requests if self.has_dp_controller else self.scheduler_requests(0)
