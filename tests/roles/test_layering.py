"""Roles never import each other's code: a module of role package X (including imports inside functions)
imports from no other role package. What roles share lives outside them (protocol, endpoints,
child_process, model_files, weight_format, shared_weights, ...), and any role may import that."""

from __future__ import annotations

import ast
import pathlib

from launcher.role_list import ROLES

# The package of every role the launcher runs, from its process entry (roles.<package>.<module>:<function>).
ROLE_PACKAGES = tuple(role.entry.split(".")[1] for role in ROLES if role.entry is not None)
ROLES_DIR = pathlib.Path(__file__).resolve().parents[2] / "roles"


def role_of(module: str) -> str | None:
    """The role package a dotted module name belongs to (roles.scheduler.models.llama -> scheduler)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "roles" and parts[1] in ROLE_PACKAGES else None


def module_name(path: pathlib.Path, roles_dir: pathlib.Path) -> str:
    parts = ["roles", *path.relative_to(roles_dir).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_names(source: str, module: str, is_package: bool) -> list[tuple[int, str]]:
    """(line, dotted name) of every import; relative imports resolved, `from a import b` also as a.b."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".") if is_package else module.split(".")[:-1]
                anchor = package[: len(package) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.append((node.lineno, base))
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return found


def layering_violations(roles_dir: pathlib.Path) -> list[str]:
    """One line per import statement that reaches into another role package."""
    violations = {}
    for path in sorted(roles_dir.rglob("*.py")):
        module = module_name(path, roles_dir)
        own = role_of(module)
        if own is None:
            continue
        for line, name in imported_names(path.read_text(), module, path.name == "__init__.py"):
            target = role_of(name)
            if target is not None and target != own:
                violations.setdefault(
                    (path.relative_to(roles_dir.parent), line), f"role {own} imports {name}"
                )
    return [f"{path}:{line}: {what}" for (path, line), what in sorted(violations.items())]


def test_no_role_imports_another_role():
    assert ROLES_DIR.is_dir()
    assert layering_violations(ROLES_DIR) == []


def test_the_scanner_finds_imports_across_roles(tmp_path):
    roles = tmp_path / "roles"
    files = {
        "__init__.py": "",
        "dp_controller/process.py": "import roles.tokenizer.app\n",
        "shared_thing.py": "from roles.scheduler import engine\n",  # shared code is not a role
        "scheduler/__init__.py": "",
        "scheduler/process.py": "import roles.protocol\nfrom roles.scheduler.engine.core import Engine\n",
        "weight_cache/__init__.py": "",
        "weight_cache/store.py": "def load():\n    from roles.scheduler.models.llama import load_model\n",
        "weight_cache/sub/__init__.py": "from ...encoder import bert\nfrom .. import daemon\n",
        "tokenizer/app.py": "from roles import scheduler\nfrom roles.model_files.model_path import x\n",
    }
    for name, source in files.items():
        (roles / name).parent.mkdir(parents=True, exist_ok=True)
        (roles / name).write_text(source)
    assert layering_violations(roles) == [
        "roles/dp_controller/process.py:1: role dp_controller imports roles.tokenizer.app",
        "roles/tokenizer/app.py:1: role tokenizer imports roles.scheduler",
        "roles/weight_cache/store.py:2: role weight_cache imports roles.scheduler.models.llama",
        "roles/weight_cache/sub/__init__.py:1: role weight_cache imports roles.encoder",
    ]
