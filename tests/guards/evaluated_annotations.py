"""Annotations that libraries evaluate at run time even under `from __future__ import annotations`.

msgspec.Struct and pydantic model fields are resolved when the class is made; FastAPI resolves a route
function's parameter and return annotations when the route is added. A name such an annotation uses must
exist at run time, so the TYPE_CHECKING scan must not treat these annotations as lazy.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

EVALUATING_BASES = frozenset(
    {
        "msgspec.Struct",
        "pydantic.BaseModel",
        "pydantic.main.BaseModel",
        "pydantic.RootModel",
        "roles.tokenizer.lazy_model.LazyModel",  # built on first use, its annotations evaluated then
    }
)
EVALUATING_DECORATORS = frozenset({"pydantic.dataclasses.dataclass"})
ROUTE_DECORATORS = frozenset(
    {"get", "post", "put", "patch", "delete", "head", "options", "trace", "api_route", "websocket"}
)


def _imported_names(tree: ast.Module) -> dict[str, str]:
    """Local name -> the dotted path it stands for (`import msgspec as ms` gives ms -> msgspec)."""
    names = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.split(".")[0]
                names[local] = alias.name if alias.asname else local
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def _dotted(node: ast.expr, imported: dict[str, str]) -> str | None:
    """`ms.Struct` -> 'msgspec.Struct' through the module's imports; None for anything but a dotted name."""
    if isinstance(node, ast.Call):
        node = node.func
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(imported.get(node.id, node.id))
    return ".".join(reversed(parts))


def _evaluating_classes(tree: ast.Module, imported: dict[str, str]) -> list[ast.ClassDef]:
    """Classes whose field annotations are evaluated, including subclasses of such classes in the module."""
    found: dict[str, ast.ClassDef] = {}
    classes = [node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
    changed = True
    while changed:  # a subclass may come before its base in walk order
        changed = False
        for cls in classes:
            if cls.name in found:
                continue
            bases = {_dotted(base, imported) for base in cls.bases}
            decorators = {_dotted(d, imported) for d in cls.decorator_list}
            if bases & (EVALUATING_BASES | set(found)) or decorators & EVALUATING_DECORATORS:
                found[cls.name] = cls
                changed = True
    return list(found.values())


def _is_route(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(
        isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute) and d.func.attr in ROUTE_DECORATORS
        for d in function.decorator_list
    )


def function_annotations(function: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.expr]:
    args = function.args
    for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
        if arg is not None and arg.annotation is not None:
            yield arg.annotation
    if function.returns is not None:
        yield function.returns


def evaluated_annotations(tree: ast.Module) -> Iterator[ast.expr]:
    """Every annotation in the module that a library evaluates at run time."""
    imported = _imported_names(tree)
    for cls in _evaluating_classes(tree, imported):
        for statement in cls.body:
            if isinstance(statement, ast.AnnAssign):
                yield statement.annotation
    if any(path.split(".")[0] == "fastapi" for path in imported.values()):
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _is_route(node):
                yield from function_annotations(node)
