"""No import circles: neither between modules (any import, at top level, inside a function or for type
checking alone) nor between the sibling folders of any package, under roles/, launcher/ and runtime_context/.
Data flows one way; where a lower layer needs to type against a higher one it declares a Protocol."""

from __future__ import annotations

import pathlib

from tests.roles.test_layering import imported_names

ROOT = pathlib.Path(__file__).resolve().parents[2]
TREES = ("roles", "launcher", "runtime_context")


def module_files(root: pathlib.Path) -> dict[str, pathlib.Path]:
    modules = {}
    for tree in TREES:
        for path in sorted((root / tree).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def import_graph(root: pathlib.Path) -> dict[str, set[str]]:
    """module -> the project modules it imports (``from a import b`` is a.b when that is a module, else a)."""
    modules = module_files(root)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for _, imported in imported_names(path.read_text(), name, path.name == "__init__.py"):
            while imported and imported not in modules:
                imported = imported.rpartition(".")[0]
            if imported and imported != name:
                graph[name].add(imported)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def folder_graphs(graph: dict[str, set[str]]) -> dict[str, dict[str, set[str]]]:
    """For every package: its children (sub-packages and modules) -> the children they import."""
    folders: dict[str, dict[str, set[str]]] = {}
    for source, targets in graph.items():
        for target in targets:
            a, b = source.split("."), target.split(".")
            common = 0
            while common < min(len(a), len(b)) - 1 and a[common] == b[common]:
                common += 1
            if common == 0 or a[common] == b[common]:
                continue
            package = ".".join(a[:common])
            folders.setdefault(package, {}).setdefault(a[common], set()).add(b[common])
    return folders


def test_no_module_imports_itself_through_others():
    assert cycles(import_graph(ROOT)) == []


def test_no_two_sibling_folders_import_each_other():
    circles = {
        package: found
        for package, children in folder_graphs(import_graph(ROOT)).items()
        if (found := cycles(children))
    }
    assert circles == {}


def test_the_checks_find_a_circle(tmp_path):
    for tree in TREES:
        (tmp_path / tree).mkdir()
    (tmp_path / "roles" / "a.py").write_text("from roles import b\n")
    (tmp_path / "roles" / "b.py").write_text("def f():\n    from roles.a import x\n")
    (tmp_path / "roles" / "p").mkdir()
    (tmp_path / "roles" / "p" / "__init__.py").write_text("")
    (tmp_path / "roles" / "p" / "one.py").write_text("import roles.q.two\n")
    (tmp_path / "roles" / "q").mkdir()
    (tmp_path / "roles" / "q" / "two.py").write_text("from roles.p import three\n")
    (tmp_path / "roles" / "p" / "three.py").write_text("")
    graph = import_graph(tmp_path)
    assert cycles(graph) == [["roles.a", "roles.b"]]
    assert cycles(folder_graphs(graph)["roles"]) == [["a", "b"], ["p", "q"]]
