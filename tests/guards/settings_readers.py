"""Find which settings the code reads, by AST: through accessors (`get_schedule().max_running_requests`,
`schedule = get_schedule(); schedule.max_running_requests`, `get_exec().moe.recorder`) or, in derivation
rules, by key (`values["memory.kv_cache_memory_mb"]`)."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from runtime_context.settings import NAMESPACES, SETTINGS


def _accessor_namespace(node: ast.AST, bound: dict[str, str]) -> str | None:
    """The namespace a bag expression stands for, or None."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id.startswith("get_"):
        namespace = node.func.id[len("get_") :]
        return namespace if namespace in NAMESPACES else None
    if isinstance(node, ast.Name | ast.Attribute):
        if (name := ast.unparse(node)) in bound:
            return bound[name]
    if isinstance(node, ast.Attribute):
        parent = _accessor_namespace(node.value, bound)
        if parent is not None and f"{parent}.{node.attr}" in NAMESPACES:
            return f"{parent}.{node.attr}"
    return None


def _bindings(tree: ast.AST) -> dict[str, str]:
    """Names (and self.attributes) bound to a bag: `x = get_ns()`, `a, b = get_x(), get_y()`."""
    bound: dict[str, str] = {}
    for _ in range(2):  # a second pass catches bindings of bindings (`moe = execution.moe`)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Assign):
                continue
            for target in node.targets:
                pairs = [(target, node.value)]
                if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                    pairs = list(zip(target.elts, node.value.elts, strict=False))
                for name, value in pairs:
                    namespace = _accessor_namespace(value, bound)
                    if namespace is not None and isinstance(name, ast.Name | ast.Attribute):
                        bound[ast.unparse(name)] = namespace
    return bound


def keys_read(source: str) -> set[str]:
    tree = ast.parse(source)
    bound = _bindings(tree)
    read = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            namespace = _accessor_namespace(node.value, bound)
            if namespace is not None and f"{namespace}.{node.attr}" in SETTINGS:
                read.add(f"{namespace}.{node.attr}")
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            if node.slice.value in SETTINGS:
                read.add(node.slice.value)
    return read


def keys_read_in(sources: Iterable[str]) -> set[str]:
    return set().union(*(keys_read(source) for source in sources))
