"""A skip names its reason, and no test imports a package it could skip without: the [test] extra installs
them all (``pytest.importorskip`` would let a missing one pass silently)."""

from __future__ import annotations

import ast

from tests.guards.project_files import ROOT


def _skip_calls_without_reason() -> list[str]:
    found = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            name = ast.unparse(node.func)
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            if name.endswith("importorskip"):
                found.append(f"{where}: importorskip")
            elif name in ("pytest.skip", "pytest.mark.skip", "pytest.mark.skipif"):
                given = any(k.arg in ("reason", "msg") for k in node.keywords)
                positional = node.args[1:] if name == "pytest.mark.skipif" else node.args
                if not given and not positional:
                    found.append(f"{where}: {name} without a reason")
    return found


def test_every_skip_names_its_reason_and_nothing_imports_or_skips():
    assert _skip_calls_without_reason() == []
