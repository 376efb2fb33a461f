import ast
import re
from collections.abc import Iterable
from pathlib import Path

import pytest
from project_files import ROOT, parse, python_files
from type_checking_scan import runtime_uses_of_type_checking_imports

FIXTURES = Path(__file__).parent / "fixtures" / "type_checking"  # *.py.txt: not scanned as project code


def offenders(paths: Iterable[Path]) -> list[str]:
    return [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for path in paths
        for name, line in runtime_uses_of_type_checking_imports(parse(path))
    ]


def test_no_type_checking_import_is_used_at_run_time():
    found = offenders(python_files())
    assert found == [], "names imported under TYPE_CHECKING but used at run time:\n" + "\n".join(found)


def test_the_guard_fails_on_a_file_that_uses_a_type_checking_name_at_run_time():
    found = offenders([FIXTURES / "runtime_use.py.txt"])
    assert found == ["tests/guards/fixtures/type_checking/runtime_use.py.txt:12: Decimal"]


def expected_flags(path: Path) -> list[tuple[str, int]]:
    """Each fixture marks what the scan must find with `# flagged: Name, Name` on the line."""
    flags = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if match := re.search(r"# flagged: (.+)$", line):
            flags.extend((name.strip(), number) for name in match.group(1).split(","))
    return sorted(flags)


@pytest.mark.parametrize("fixture", sorted(p.name for p in FIXTURES.glob("*.py.txt")))
def test_scan_finds_exactly_what_each_fixture_marks(fixture):
    path = FIXTURES / fixture
    expected = expected_flags(path)
    assert (expected == []) == (fixture == "lazy_only.py.txt")
    assert runtime_uses_of_type_checking_imports(parse(path)) == expected


def scan(source: str):
    return runtime_uses_of_type_checking_imports(ast.parse(source))


def test_scan_flags_run_time_use_and_spares_annotations():
    guarded = "from __future__ import annotations\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from x import Foo\n"
    assert scan(guarded + "def f(a: Foo) -> Foo:\n    return a\n") == []
    assert scan(guarded + "def f(a):\n    return isinstance(a, Foo)\n") == [("Foo", 6)]
    assert scan(guarded + "y: Foo = 1\n") == []


def test_scan_without_lazy_annotations_counts_annotations_as_run_time():
    source = (
        "import typing\nif typing.TYPE_CHECKING:\n    import numpy as np\ndef f(a: np.ndarray):\n    pass\n"
    )
    assert scan(source) == [("np", 4)]
