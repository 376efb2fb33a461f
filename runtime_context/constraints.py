"""Cross-field checks: combinations of leaves that each pass alone but contradict each other."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from runtime_context.problems import ConfigProblem
from runtime_context.provenance import Source


@dataclass(frozen=True)
class Constraint:
    keys: tuple[str, ...]  # the first key is the one reported
    holds: Callable[[Mapping[str, Any]], bool]
    message: Callable[[Mapping[str, Any]], str]


def _rebalances(v: Mapping[str, Any]) -> bool:
    return v["exec.moe.eplb_rebalance_interval_passes"] > 0 or v["exec.moe.num_redundant_experts"] > 0


CONSTRAINTS: tuple[Constraint, ...] = (
    Constraint(
        ("exec.moe.eplb_rebalance_interval_passes", "exec.moe.num_redundant_experts", "parallel.ep_size"),
        lambda v: not _rebalances(v) or v["parallel.ep_size"] > 1,
        lambda v: "rebalancing experts needs expert-parallel ranks: set parallel.ep_size > 1",
    ),
    Constraint(
        (
            "exec.moe.eplb_rebalance_interval_passes",
            "exec.moe.num_redundant_experts",
            "expert_backup.enabled",
        ),
        lambda v: not _rebalances(v) or v["expert_backup.enabled"],
        lambda v: "rebalancing experts moves them through the expert_backup: set expert_backup.enabled: true",
    ),
    Constraint(
        ("parallel.dp_size", "parallel.ep_size"),
        lambda v: v["parallel.ep_size"] == 1 or v["parallel.dp_size"] in (1, v["parallel.ep_size"]),
        lambda v: (
            f"must be 1 or equal parallel.ep_size={v['parallel.ep_size']}: every expert-parallel rank is "
            f"one replica; got {v['parallel.dp_size']}"
        ),
    ),
    Constraint(
        ("parallel.ep_timeout_s", "parallel.ep_size", "launcher.stall_timeout_s"),
        lambda v: v["parallel.ep_size"] == 1 or v["parallel.ep_timeout_s"] < v["launcher.stall_timeout_s"],
        lambda v: (
            f"must be shorter than launcher.stall_timeout_s={v['launcher.stall_timeout_s']:g}: a rank waiting "
            f"for a missing one completes no step meanwhile, and names it before it is taken for stuck itself; "
            f"got {v['parallel.ep_timeout_s']:g}"
        ),
    ),
    Constraint(
        ("launcher.late_after_s", "launcher.heartbeat_timeout_s"),
        lambda v: v["launcher.late_after_s"] < v["launcher.heartbeat_timeout_s"],
        lambda v: (
            f"must be shorter than launcher.heartbeat_timeout_s={v['launcher.heartbeat_timeout_s']:g}: a late "
            f"role is one not yet taken for hung; got {v['launcher.late_after_s']:g}"
        ),
    ),
    Constraint(
        ("parallel.backend", "weight_cache.enabled", "expert_backup.enabled"),
        lambda v: (
            v["parallel.backend"] == "local" or not (v["weight_cache.enabled"] or v["expert_backup.enabled"])
        ),
        lambda v: (
            "ray actors load their weights themselves: the weight_cache_daemon and the expert_backup serve "
            "processes of this machine only; turn them off with backend ray"
        ),
    ),
    Constraint(
        ("parallel.bind_host",),
        lambda v: v["parallel.bind_host"] not in ("0.0.0.0", "::", ""),
        lambda v: (
            f"must name one address of this machine, not every interface; got {v['parallel.bind_host']!r}"
        ),
    ),
    Constraint(
        ("weight_cache.persist", "weight_cache.enabled"),
        lambda v: not v["weight_cache.persist"] or v["weight_cache.enabled"],
        lambda v: "true needs weight_cache.enabled: true",
    ),
    Constraint(
        ("exec.speculative_draft_model", "exec.speculative_method"),
        lambda v: v["exec.speculative_method"] != "draft_model" or bool(v["exec.speculative_draft_model"]),
        lambda v: "must name the draft model (a path or alias) when exec.speculative_method is draft_model",
    ),
    Constraint(
        ("exec.speculative_ngram_min", "exec.speculative_ngram_max"),
        lambda v: v["exec.speculative_ngram_min"] <= v["exec.speculative_ngram_max"],
        lambda v: (
            f"must be <= exec.speculative_ngram_max={v['exec.speculative_ngram_max']}; "
            f"got {v['exec.speculative_ngram_min']}"
        ),
    ),
    Constraint(
        ("memory.kv_cache_tokens", "memory.page_size"),
        lambda v: (
            v["memory.kv_cache_tokens"] == 0 or v["memory.kv_cache_tokens"] >= 2 * v["memory.page_size"]
        ),
        lambda v: (
            f"must hold at least two pages of memory.page_size={v['memory.page_size']} tokens; "
            f"got {v['memory.kv_cache_tokens']}"
        ),
    ),
    Constraint(
        ("memory.kv_cache_tokens", "schedule.chunked_prefill_size"),
        lambda v: (
            v["memory.kv_cache_tokens"] == 0
            or v["memory.kv_cache_tokens"] >= v["schedule.chunked_prefill_size"]
        ),
        lambda v: (
            f"is smaller than schedule.chunked_prefill_size={v['schedule.chunked_prefill_size']}; "
            "one prefill chunk could never fit"
        ),
    ),
)


def check_constraints(
    values: Mapping[str, Any], sources: Mapping[str, Source], extra: Sequence[Constraint] = ()
) -> list[ConfigProblem]:
    """Every built-in constraint, then the caller's own (the launcher checks what needs roles' code)."""
    problems = []
    for constraint in (*CONSTRAINTS, *extra):
        if constraint.holds(values):
            continue
        first, *others = constraint.keys
        where = sources[first].detail if sources[first].kind == "file" else str(sources[first])
        involved = ", ".join(f"{k} from {sources[k]}" for k in others)
        message = constraint.message(values)
        problems.append(ConfigProblem(where, first, f"{message} ({involved})" if involved else message))
    return problems
