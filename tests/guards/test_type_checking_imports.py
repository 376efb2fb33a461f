import ast

from project_files import ROOT, parse, python_files
from type_checking_scan import runtime_uses_of_type_checking_imports


def test_no_type_checking_import_is_used_at_run_time():
    offenders = [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for path in python_files()
        for name, line in runtime_uses_of_type_checking_imports(parse(path))
    ]
    assert offenders == [], "names imported under TYPE_CHECKING but used at run time:\n" + "\n".join(
        offenders
    )


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
