"""Every setting of roleserve, declared exactly once. Namespaces are the unit of projection."""

from __future__ import annotations

from types import MappingProxyType

from runtime_context.setting import Setting

NAMESPACES = (
    "model",
    "http",
    "tokenizer",
    "schedule",
    "memory",
    "parallel",
    "exec",
    "exec.moe",
    "encoder",
    "weight_cache",
    "expert_backup",
    "observability",
    "launcher",
    "roles",
)

# Namespaces of the design that hold no setting yet: each setting arrives with the code that reads it,
# so that no declared setting ever does nothing.
RESERVED_NAMESPACES: frozenset[str] = frozenset()

_DECLARED: list[Setting] = []


def _declare(namespace: str, name: str, type_: type, default, doc: str, **bounds) -> None:
    setting = Setting(namespace=namespace, name=name, type=type_, default=default, doc=doc, **bounds)
    if setting.type in (list, dict):
        setting = Setting(**{**setting.__dict__, "default": setting.check(default)})
    _DECLARED.append(setting)


# model: what is served
_declare(
    "model",
    "path",
    str,
    "smollm2",
    "Model to serve: the alias smollm2, a .gguf file, or a Hugging Face folder.",
)
_declare("model", "served_name", str, "smollm2", "Name clients pass as `model` and /v1/models lists.")
_declare(
    "model",
    "context_length",
    int,
    0,
    "Longest sequence (prompt + output) in tokens; 0 reads it from the model file.",
    minimum=0,
)

# http: the OpenAI-compatible front
_declare("http", "host", str, "127.0.0.1", "Address the HTTP server binds.")
_declare("http", "port", int, 30000, "Port the HTTP server binds.", minimum=1, maximum=65535)
_declare(
    "http",
    "api_key",
    str,
    None,
    "Bearer token every request must carry; null disables auth.",
    optional=True,
    secret=True,
)
_declare("http", "cors_origins", list, ["*"], "Origins allowed by CORS; an empty list disables CORS headers.")
_declare(
    "http",
    "max_request_bytes",
    int,
    4 * 2**20,
    "Largest request body accepted; a larger one is answered 413 before it is read whole.",
    minimum=1024,
)
_declare(
    "http",
    "request_timeout_s",
    float,
    600.0,
    "A request still unfinished after this many seconds is aborted.",
    minimum=0.1,
)

# tokenizer: the HTTP/tokenization processes
_declare("tokenizer", "workers", int, 1, "Number of tokenizer (HTTP front) processes.", minimum=1, maximum=64)
_declare(
    "tokenizer",
    "encode_threads",
    int,
    2,
    "Prompts each HTTP front tokenizes at once, each in its own thread (tokenizers releases the GIL while it "
    "encodes, so /health and other requests never wait on a long prompt); more wait for a free thread.",
    minimum=1,
    maximum=64,
)
_declare(
    "tokenizer",
    "default_max_tokens",
    int,
    16,
    "max_tokens used when a completion request gives none.",
    minimum=1,
)
_declare(
    "tokenizer",
    "chat_template",
    str,
    None,
    "Chat template for /v1/chat/completions and /tokenize messages: a .jinja file, or the template text "
    "itself; replaces the model's own. null: the model's.",
    optional=True,
)

# schedule: continuous batching limits
_declare(
    "schedule",
    "max_running_requests",
    int,
    64,
    "Most requests decoding together in one scheduler (each dp replica has its own).",
    minimum=1,
    maximum=4096,
)
_declare(
    "schedule",
    "max_queued_requests",
    int,
    1024,
    "Most requests waiting in one scheduler beyond the running ones; past both: 503 + Retry-After.",
    minimum=0,
)
_declare(
    "schedule",
    "chunked_prefill_size",
    int,
    512,
    "Most prompt tokens prefilled in one step; longer prompts are split across steps.",
    minimum=16,
    maximum=1 << 20,
)

# memory: the paged KV cache
_declare(
    "memory",
    "kv_cache_tokens",
    int,
    0,
    "Tokens the KV cache holds (the full-attention layers' pool; each sliding window's pool holds what the "
    "running requests' windows need, at most as many); 0 derives it from memory.kv_cache_memory_mb and the "
    "model's shape.",
    minimum=0,
)
_declare(
    "memory",
    "kv_cache_memory_mb",
    int,
    2048,
    "Memory budget of the KV cache, used when memory.kv_cache_tokens is 0.",
    minimum=16,
)
_declare(
    "memory",
    "kv_cache_dtype",
    str,
    "auto",
    "Element type of the KV cache: float32, float16 (half the memory per token and half the bytes attention "
    "reads; K and V rounded to 11 significant bits, so greedy output may differ from exact) or auto: float16 "
    "where exec.activation_dtype int8 already rounds the inputs of the file's quantised linears on the CPU "
    "kernels' path (98.4-99.4% teacher-forced top-1 agreement with exact on the five files measured, "
    "against 98.6-99.8% with float32), float32 everywhere else.",
    choices=("auto", "float32", "float16"),
)
_declare("memory", "page_size", int, 16, "Tokens per KV-cache page.", minimum=1, maximum=1024)
_declare("memory", "prefix_cache", bool, True, "Reuse cached pages of shared prompt prefixes.")

# parallel: scheduler replicas (data-parallel) and expert-parallel ranks
_declare("parallel", "dp_size", int, 1, "Number of scheduler replicas.", minimum=1, maximum=64)
_declare(
    "parallel",
    "ep_size",
    int,
    1,
    "Expert-parallel ranks: that many scheduler replicas, each holding num_experts / ep_size experts of "
    "every MoE layer and running its own requests' attention; tokens meet their experts by all-to-all.",
    minimum=1,
    maximum=64,
)
_declare(
    "parallel",
    "ep_timeout_s",
    float,
    20.0,
    "How long an expert-parallel rank waits for the others at a collective before it stops, naming the "
    "ranks that did not arrive.",
    minimum=1,
)
_declare(
    "parallel",
    "load_balance",
    str,
    "round_robin",
    "How the dp_controller picks a replica.",
    choices=("round_robin", "shortest_queue"),
)
_declare(
    "parallel",
    "backend",
    str,
    "local",
    "Where scheduler replicas run: local child processes, or ray actors placed by a Ray cluster (the "
    "tokenizers, dp_controller and launcher stay on this machine).",
    choices=("local", "ray"),
)
_declare(
    "parallel",
    "ray_address",
    str,
    "local",
    "The Ray cluster to join with backend ray (host:port of its head, or ray://host:port); local starts a "
    "private one-machine cluster for this server and stops it on exit.",
)
_declare(
    "parallel",
    "ray_placement",
    str,
    "pack",
    "How the placement group places the replicas' bundles (exec.threads CPUs each): pack fills few nodes, "
    "spread uses as many as it can.",
    choices=("pack", "spread"),
)
_declare(
    "parallel",
    "ray_cpus_per_replica",
    int,
    0,
    "CPUs each replica's placement-group bundle reserves with backend ray; 0 takes exec.threads.",
    minimum=0,
)
_declare(
    "parallel",
    "bind_host",
    str,
    "127.0.0.1",
    "With backend ray, the address of this machine the scheduler actors connect to (every such socket is "
    "TCP with CURVE): set it to this machine's cluster address when actors run on other machines.",
)

# exec: how the model runs
_declare("exec", "threads", int, 0, "Compute threads per scheduler; 0 uses the cores available.", minimum=0)
_declare(
    "exec",
    "weight_dtype",
    str,
    "auto",
    "Weight execution format: auto (every tensor in the file's own type on roleserve's CPU kernels), exact "
    "(float32, token-identical to transformers) or torch's weight-only int8 / int4 kernels.",
    choices=("auto", "exact", "int8", "int4"),
)
_declare(
    "exec",
    "kernel_isa",
    str,
    "auto",
    "Instruction set of the CPU kernels: auto (the widest path this CPU has that rounds nothing to "
    "bfloat16), or one to force: avx2 (the baseline, for comparisons and bug reports), avx512 (F, BW, DQ, VL), "
    "avx512vnni (avx512 with VNNI: int16 batches in one instruction a product pair) or avx512bf16 (float "
    "weights, and every weight with float32 activations, multiply batches of 8+ rows in bfloat16: faster, "
    "~1% less top-1 agreement with exact); one the CPU lacks is refused.",
    choices=("auto", "avx2", "avx512", "avx512vnni", "avx512bf16"),
)
_declare(
    "exec",
    "activation_dtype",
    str,
    "int8",
    "How the CPU kernels multiply quantised weights: int8 (the default: every linear rounds each 32 inputs "
    "of a row to int8 steps of 1/127 of their largest, the row's 4 largest inputs kept out and multiplied in "
    "float; 98.7-99.8% teacher-forced top-1 agreement with exact on the files measured; in calls of 16 rows "
    "or more every quantised type with AVX512_VNNI, on AVX2 the types whose codes fit 6 bits, not Q8_0 or "
    "IQ4; below 16 rows on AVX2 those types but Q2_K and Q3_K, with the same bits as at 16 or more; int16 "
    "elsewhere), mixed (int8 as above for the attention output and MLP down "
    "projections only, int16 for the rest: 99.2-99.8%), int16 (each 32 inputs rounded to int16 steps of "
    "1/32767 of their largest and multiplied with the blocks' integer codes; float tensor types stay float32; "
    "100% agreement) or float32 (slower).",
    choices=("float32", "int16", "int8", "mixed"),
)

_declare(
    "exec",
    "speculative_method",
    str,
    "none",
    "Speculative decoding: none, ngram (prompt lookup: a decoding request's last n tokens are looked up "
    "earlier in its prompt + output and the tokens that followed are proposed) or draft_model (a second, "
    "smaller model with the same tokenizer, exec.speculative_draft_model, proposes the tokens it would pick or "
    "draw); the "
    "model checks them all in one step. Greedy output is token-identical either way, sampled output keeps "
    "its distribution; requests with penalties, logprobs or structured output decode one token per step.",
    choices=("none", "ngram", "draft_model"),
)
_declare(
    "exec",
    "speculative_draft_model",
    str,
    "",
    "The draft model of speculative_method draft_model: a path or alias as model.path takes (GGUF file or "
    "Hugging Face folder) whose tokenizer has the served model's tokens, run in exec.weight_dtype beside it "
    "with a KV cache of memory.kv_cache_tokens tokens of its own (its weights and that cache come on top of "
    "memory.kv_cache_memory_mb).",
)
_declare(
    "exec",
    "speculative_num_draft_tokens",
    int,
    3,
    "Most tokens proposed per decoding request and step (each costs one more row in the step's forward).",
    minimum=1,
    maximum=32,
)
_declare(
    "exec",
    "speculative_ngram_max",
    int,
    4,
    "Longest suffix of a request's tokens looked up for a draft (tried first, then shorter ones).",
    minimum=1,
    maximum=64,
)
_declare(
    "exec",
    "speculative_ngram_min",
    int,
    2,
    "Shortest suffix looked up; no earlier occurrence of even this many tokens: no draft, a plain decode.",
    minimum=1,
    maximum=64,
)

# exec.moe: what MoE routing did
_declare(
    "exec.moe",
    "expert_distribution_recorder_mode",
    str,
    "off",
    "Expert distribution recorder: off (no-op), stat (tokens per layer and expert each pass), per_pass "
    "(one record per pass) or per_token (each token's top-k experts and position).",
    choices=("off", "stat", "per_pass", "per_token"),
)
_declare(
    "exec.moe",
    "expert_distribution_recorder_buffer_size",
    int,
    1000,
    "Forward passes a recording keeps (the last ones).",
    minimum=1,
)
_declare(
    "exec.moe",
    "recorder_dir",
    str,
    None,
    "Where recording dumps are written; null uses <temp dir>/roleserve-expert-distribution.",
    optional=True,
)
_declare(
    "exec.moe",
    "expert_balancedness_report_mode",
    str,
    "off",
    "Balancedness of expert-parallel work: off, server_log, prometheus or both (any but off counts every "
    "pass like the stat recorder).",
    choices=("off", "server_log", "prometheus", "both"),
)
_declare(
    "exec.moe",
    "expert_balancedness_log_every",
    int,
    100,
    "Forward passes between two balancedness lines in the server log.",
    minimum=1,
)

# encoder: /v1/embeddings
_declare("encoder", "enabled", bool, False, "Start the encoder role and serve /v1/embeddings.")
_declare(
    "encoder", "model", str, "all-minilm-l6-v2", "Encoder model: the alias all-minilm-l6-v2 or a folder."
)
_declare("encoder", "workers", int, 1, "Number of encoder processes.", minimum=1, maximum=16)
_declare("encoder", "max_batch_tokens", int, 8192, "Most tokens in one embedding batch.", minimum=1)
_declare("encoder", "max_wait_ms", float, 5.0, "Longest wait to fill an embedding batch.", minimum=0)
_declare("encoder", "truncate", bool, False, "Truncate inputs longer than the model limit instead of a 400.")

_declare(
    "exec.moe",
    "num_redundant_experts",
    int,
    0,
    "Extra expert slots per MoE layer that a rebalance gives to replicas of the hottest experts "
    "(experts + redundant must divide by parallel.ep_size).",
    minimum=0,
    maximum=1024,
)
_declare(
    "exec.moe",
    "eplb_rebalance_interval_passes",
    int,
    0,
    "Rebalance experts over the expert-parallel ranks every this many forward passes; 0 only on "
    "POST /admin/eplb/rebalance. Needs expert_backup.enabled.",
    minimum=0,
)
_declare(
    "exec.moe",
    "eplb_min_rebalance_balancedness",
    float,
    0.95,
    "A rebalance is skipped while the balancedness of the last eplb_window_passes passes is above this.",
    minimum=0,
    maximum=1,
)
_declare(
    "exec.moe",
    "eplb_window_passes",
    int,
    1000,
    "Forward passes whose expert loads a rebalance plans from (the last ones).",
    minimum=1,
)

# expert_backup: every expert of an MoE model in host shared memory
_declare(
    "expert_backup",
    "enabled",
    bool,
    False,
    "Run one expert_backup process holding every expert of the MoE model in shared memory: expert-parallel "
    "ranks take their experts from it, and a rebalance moves experts through it.",
)
_declare(
    "expert_backup",
    "max_memory_mb",
    int,
    16384,
    "Most shared memory the experts may take; a model whose experts need more is a config error.",
    minimum=1,
)
_declare(
    "expert_backup",
    "on_unavailable",
    str,
    "load_from_disk",
    "What a scheduler rank does when the expert_backup cannot answer at start-up.",
    choices=("load_from_disk", "fail"),
)

# weight_cache: the shared-memory weight daemon
_declare(
    "weight_cache",
    "enabled",
    bool,
    False,
    "Load weights once in the weight_cache_daemon and share them (pays with several replicas or large models).",
)
_declare(
    "weight_cache", "persist", bool, False, "Keep the daemon and its shared memory across serve restarts."
)
_declare(
    "weight_cache",
    "on_unavailable",
    str,
    "load_from_disk",
    "What a scheduler does when the daemon is down or stale.",
    choices=("load_from_disk", "fail"),
)


# observability
_declare(
    "observability",
    "log_level",
    str,
    "info",
    "Log level of every process.",
    choices=("debug", "info", "warning", "error"),
)
_declare("observability", "metrics", bool, True, "Serve Prometheus metrics on GET /metrics.")
_declare("observability", "log_requests", bool, False, "Log a line per finished request, never its text.")
_declare(
    "observability",
    "stat_loggers",
    dict,
    {},
    "Metrics collector per role: role name to an importable `module:Class` that subclasses the role's own "
    "collector (checked before anything starts). Unlisted roles use their own.",
)

# launcher: supervision
_declare(
    "launcher",
    "startup_timeout_s",
    float,
    300.0,
    "How long every role may take to report READY.",
    minimum=1,
)
_declare(
    "launcher",
    "shutdown_timeout_s",
    float,
    30.0,
    "How long in-flight requests may drain on shutdown.",
    minimum=0,
)
_declare(
    "launcher",
    "restart_policy",
    str,
    "never",
    "What happens when a child dies: never (stop everything) or on-failure (restart it).",
    choices=("never", "on-failure"),
)
_declare("launcher", "max_restarts", int, 3, "Restarts per role under on-failure.", minimum=0)
_declare(
    "launcher",
    "heartbeat_timeout_s",
    float,
    10.0,
    "A ready child silent this long is hung (stopped, or wedged in native code): handled as a dead one. The "
    "scheduler and the encoder beat from a thread every 0.25 s however long their steps and batches take, so "
    "only a process that does not run falls silent.",
    minimum=1,
)
_declare(
    "launcher",
    "stall_timeout_s",
    float,
    120.0,
    "A scheduler (or encoder) that holds requests but completes no step (batch) this long is stuck (alive, not "
    "progressing): handled as a dead one. Its heartbeat comes from a thread, so a long step is never taken for a "
    "stuck one.",
    minimum=1,
)
_declare(
    "launcher",
    "late_after_s",
    float,
    0.0,
    "A role that requests wait on (scheduler, dp_controller, encoder) silent this long is late: /health answers "
    "503 naming it until it is heard again. 0 derives min(3 s, heartbeat_timeout_s / 2).",
    minimum=0,
)
_declare(
    "launcher",
    "runtime_dir",
    str,
    None,
    "Parent of the private runtime dir for ipc sockets; null uses the system temp dir.",
    optional=True,
)

# roles: projection enforcement
_declare(
    "roles",
    "enforcement",
    str,
    "enforce",
    "enforce: a role sees only its namespaces; record: all reads allowed and recorded; off: debugging only.",
    choices=("enforce", "record", "off"),
)

_BY_KEY: dict[str, Setting] = {s.key: s for s in _DECLARED}
SETTINGS: MappingProxyType[str, Setting] = MappingProxyType(_BY_KEY)


def settings_in(namespace: str) -> list[Setting]:
    """The leaves declared directly in a namespace (not in its sub-namespaces)."""
    return [s for s in _DECLARED if s.namespace == namespace]


def child_namespaces(namespace: str) -> list[str]:
    """Direct sub-namespaces, e.g. exec -> [exec.moe]."""
    depth = namespace.count(".") + 1
    return [ns for ns in NAMESPACES if ns.startswith(namespace + ".") and ns.count(".") == depth]


def top_namespaces() -> list[str]:
    return [ns for ns in NAMESPACES if "." not in ns]


assert all(s.namespace in NAMESPACES for s in _DECLARED)
assert len(SETTINGS) == len(_DECLARED), "a setting is declared twice"
