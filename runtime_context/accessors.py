"""Typed entry points to the published config, one per top-level namespace (exec.moe is get_exec().moe)."""

from __future__ import annotations

from runtime_context.bags import Bag
from runtime_context.context import _CONTEXT


def get_model() -> Bag:
    return _CONTEXT.bag("model")


def get_http() -> Bag:
    return _CONTEXT.bag("http")


def get_tokenizer() -> Bag:
    return _CONTEXT.bag("tokenizer")


def get_schedule() -> Bag:
    return _CONTEXT.bag("schedule")


def get_memory() -> Bag:
    return _CONTEXT.bag("memory")


def get_parallel() -> Bag:
    return _CONTEXT.bag("parallel")


def get_exec() -> Bag:
    return _CONTEXT.bag("exec")


def get_encoder() -> Bag:
    return _CONTEXT.bag("encoder")


def get_weight_cache() -> Bag:
    return _CONTEXT.bag("weight_cache")


def get_expert_backup() -> Bag:
    return _CONTEXT.bag("expert_backup")


def get_observability() -> Bag:
    return _CONTEXT.bag("observability")


def get_launcher() -> Bag:
    return _CONTEXT.bag("launcher")


class _PublishedLeaves:
    """``published_leaves["ns.leaf"]``: one leaf through its namespace's bag, like ``get_ns().leaf`` (the
    projection checks it, record mode records it), for code that names leaves by key."""

    def __getitem__(self, key: str):
        namespace, _, leaf = key.rpartition(".")
        return getattr(_CONTEXT.bag(namespace), leaf)


published_leaves = _PublishedLeaves()


# Balancedness reporting: the metrics and logging code asks these, never the raw record.
def reports_expert_balancedness() -> bool:
    return _CONTEXT.bag("exec.moe").expert_balancedness_report_mode != "off"


def logs_expert_balancedness_to_server_log() -> bool:
    return _CONTEXT.bag("exec.moe").expert_balancedness_report_mode in ("server_log", "both")


def exports_expert_balancedness_to_prometheus() -> bool:
    return _CONTEXT.bag("exec.moe").expert_balancedness_report_mode in ("prometheus", "both")
