"""Find names imported under `if TYPE_CHECKING:` that are used at run time (a NameError waiting to happen)."""

from __future__ import annotations

import ast

from evaluated_annotations import evaluated_annotations, function_annotations


def _is_type_checking_test(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _has_future_annotations(tree: ast.Module) -> bool:
    return any(
        isinstance(node, ast.ImportFrom)
        and node.module == "__future__"
        and any(a.name == "annotations" for a in node.names)
        for node in tree.body
    )


def runtime_uses_of_type_checking_imports(tree: ast.Module) -> list[tuple[str, int]]:
    """(name, line) for every run-time load of a TYPE_CHECKING-only name."""
    guarded_blocks = [
        node for node in ast.walk(tree) if isinstance(node, ast.If) and _is_type_checking_test(node.test)
    ]
    names: set[str] = set()
    for block in guarded_blocks:
        for node in ast.walk(block):
            if isinstance(node, ast.Import | ast.ImportFrom):
                names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    if not names:
        return []
    lazy_annotations = _has_future_annotations(tree)
    skipped: set[int] = set()  # ids of subtrees that never run
    for block in guarded_blocks:
        skipped.update(id(n) for stmt in block.body for n in ast.walk(stmt))
    if lazy_annotations:  # annotations stay strings, unless a library evaluates them
        evaluated = {id(annotation) for annotation in evaluated_annotations(tree)}
        for node in ast.walk(tree):
            annotations = []
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                annotations.extend(function_annotations(node))
            elif isinstance(node, ast.AnnAssign):
                annotations.append(node.annotation)
            for annotation in annotations:
                if id(annotation) not in evaluated:
                    skipped.update(id(n) for n in ast.walk(annotation))
    return sorted(
        (node.id, node.lineno)
        for node in ast.walk(tree)
        if isinstance(node, ast.Name)
        and isinstance(node.ctx, ast.Load)
        and node.id in names
        and id(node) not in skipped
    )
