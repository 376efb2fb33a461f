"""Where every socket of one server lives: ipc:// paths inside the launcher's private runtime dir.

Derived from (runtime_dir, topology), never stored twice; passed to every child by the launcher.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Endpoints:
    runtime_dir: str
    num_tokenizers: int
    dp_size: int  # scheduler replicas; with expert parallelism, its ranks
    num_encoders: int = 0  # 0: /v1/embeddings is not served
    ep_size: int = 1  # expert-parallel ranks among the schedulers (1: none)
    weight_cache: str | None = None  # the weight_cache_daemon's address; None: schedulers load from disk
    expert_backup: str | None = None  # the expert_backup's address; None: ranks read experts from disk

    def _ipc(self, name: str) -> str:
        return f"ipc://{self.runtime_dir}/{name}"

    @property
    def private_weight_cache(self) -> str:
        """The daemon's address when it runs as a child of this server (not persistent)."""
        return self._ipc("weight_cache")

    @property
    def control(self) -> str:
        return self._ipc("control")

    def scheduler_requests(self, instance: int) -> str:
        return self._ipc(f"scheduler-{instance}.requests")

    def tokenizer_results(self, instance: int) -> str:
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
        return self._ipc("dp_controller.load")

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
        return self.dp_requests if self.dp_size > 1 else self.scheduler_requests(0)
