"""What every route of one tokenizer process shares: its settings (read once from its bags), the
tokenizer, the engine client, metrics and the draining flag."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from roles.tokenizer.embed_client import EmbedClient
from roles.tokenizer.engine_client import EngineClient
from roles.tokenizer.metrics import ServingMetrics
from runtime_context import (
    exports_expert_balancedness_to_prometheus,
    get_http,
    get_model,
    get_observability,
    get_tokenizer,
)


@dataclass(frozen=True)
class FrontSettings:
    served_name: str
    context_length: int
    default_max_tokens: int
    api_key: str | None
    metrics_enabled: bool
    log_requests: bool
    request_timeout_s: float
    max_request_bytes: int
    exports_expert_balancedness: bool  # exec.moe.expert_balancedness_report_mode prometheus or both
    encode_threads: int  # prompts tokenized at once (tokenizer.encode_threads)

    @classmethod
    def from_context(cls) -> FrontSettings:
        model, http, observability = get_model(), get_http(), get_observability()
        return cls(
            served_name=model.served_name,
            context_length=model.context_length,
            default_max_tokens=get_tokenizer().default_max_tokens,
            api_key=http.api_key,
            metrics_enabled=observability.metrics,
            log_requests=observability.log_requests,
            request_timeout_s=http.request_timeout_s,
            max_request_bytes=http.max_request_bytes,
            exports_expert_balancedness=exports_expert_balancedness_to_prometheus(),
            encode_threads=get_tokenizer().encode_threads,
        )


STARTING = "the server is starting"  # a front's state until the launcher first reports on the other roles


@dataclass
class FrontState:
    settings: FrontSettings
    tokenizer: object  # roles.tokenizer.text_tokenizer.TextTokenizer
    client: EngineClient
    metrics: ServingMetrics
    embed_client: EmbedClient | None = None  # None when no encoder role runs
    inspect: object = None  # async callable returning the live inspect entries of every process
    is_draining: bool = False
    # The roles requests wait on that the launcher reports late or down (RoleHealth): /health answers 503
    # and new requests that would wait on them are refused.
    unavailable: list[str] = field(default_factory=list)
    failure: str | None = None  # the latest role failure the launcher reported (RoleFailed), as it said it
    num_active_http: int = 0
    created: int = 0
    encode_pool: ThreadPoolExecutor = field(init=False)  # where prompts are tokenized, off the event loop

    def __post_init__(self) -> None:
        self.encode_pool = ThreadPoolExecutor(self.settings.encode_threads, thread_name_prefix="encode")

    def unavailable_for(self, role: str) -> list[str]:
        """The unavailable roles a new request for ``role`` ("scheduler" or "encoder") would wait on in vain.

        A generation waits on the dp_controller when there is one, and on a scheduler: it is refused only when
        every replica is unavailable (the dp_controller sends work to the others)."""
        if STARTING in self.unavailable:
            return [STARTING]
        if role == "scheduler":
            controller = [name for name in self.unavailable if name.startswith("dp_controller[")]
            if controller:
                return controller
        names = [name for name in self.unavailable if name.startswith(role + "[")]
        if role == "scheduler" and len(names) < self.client.num_schedulers:
            return []
        return names

    def is_at_capacity(self) -> bool:
        """Every scheduler holds as many requests as it may: a new one would be refused (Overloaded)."""
        loads = self.client.scheduler_load.values()
        return len(loads) >= self.client.num_schedulers and all(load.is_full for load in loads)

    def note_worker_metrics(self) -> None:
        """Write this worker's in-flight counts and dropped frames where every worker's scrape reads them."""
        num_embeddings = len(self.embed_client.waiting) if self.embed_client is not None else 0
        self.metrics.note_worker(self.client.num_in_flight, num_embeddings, self.client.frames.num_dropped)
