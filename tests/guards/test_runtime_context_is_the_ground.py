"""runtime_context is the ground floor: it imports nothing from roles/ or launcher/, statically or at run time."""

import ast
import subprocess
import sys

from tests.guards.project_files import ROOT, parse

ABOVE = ("roles", "launcher")


def imports_from_above(tree: ast.Module) -> list[str]:
    found = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif isinstance(node, ast.Call) and ast.unparse(node.func) in (
            "importlib.import_module",
            "__import__",
        ):
            names = [arg.value for arg in node.args[:1] if isinstance(arg, ast.Constant)]
        found += [f"{name} (line {node.lineno})" for name in names if name.split(".")[0] in ABOVE]
    return found


def test_no_runtime_context_module_imports_roles_or_launcher():
    offenders = {
        str(path.relative_to(ROOT)): found
        for path in sorted((ROOT / "runtime_context").rglob("*.py"))
        if (found := imports_from_above(parse(path)))
    }
    assert offenders == {}


def test_the_scan_catches_each_import_form():
    source = "import roles.scheduler\nfrom launcher.cli import main\nimport importlib\nimportlib.import_module('roles.x')\n"
    assert len(imports_from_above(ast.parse(source))) == 3


def test_importing_every_runtime_context_module_loads_nothing_above_it():
    modules = [p.stem for p in (ROOT / "runtime_context").glob("*.py") if p.stem != "__init__"]
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}: importlib.import_module('runtime_context.' + name)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('roles', 'launcher')))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert result.stdout.strip() == "[]"
