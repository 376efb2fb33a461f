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


def accessor_reads(source: str) -> dict[str, set[str]]:
    """Accessor functions of runtime_context that answer from a bag (`_CONTEXT.bag("exec.moe").leaf`):
    function name -> the keys it reads. Code that calls one reads those keys."""
    found: dict[str, set[str]] = {}
    for function in ast.parse(source).body:
        if not isinstance(function, ast.FunctionDef):
            continue
        for node in ast.walk(function):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Call)
                and ast.unparse(node.value.func).endswith(".bag")
                and node.value.args
                and isinstance(node.value.args[0], ast.Constant)
                and f"{node.value.args[0].value}.{node.attr}" in SETTINGS
            ):
                found.setdefault(function.name, set()).add(f"{node.value.args[0].value}.{node.attr}")
    return found


def keys_read(source: str, accessors: dict[str, set[str]] | None = None) -> set[str]:
    tree = ast.parse(source)
    bound = _bindings(tree)
    read = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in (accessors or {})
        ):
            read |= (accessors or {})[node.func.id]
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
