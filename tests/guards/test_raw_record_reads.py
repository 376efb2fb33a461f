"""Ratchet: code outside runtime_context reads config through role bags, never the raw record."""

import ast

from project_files import ROOT, parse, python_files

RAW_ACCESSORS = {"raw_value", "raw_values"}
# Pinned at zero. Lower only; never raise.
ALLOWED_RAW_READS = 0
# Tests of the record itself must read it raw.
EXEMPT = ("runtime_context/", "tests/runtime_context/", "tests/guards/")


def raw_reads() -> list[str]:
    found = []
    for path in python_files():
        relative = path.relative_to(ROOT).as_posix()
        if relative.startswith(EXEMPT):
            continue
        for node in ast.walk(parse(path)):
            if isinstance(node, ast.Attribute) and node.attr in RAW_ACCESSORS:
                found.append(f"{relative}:{node.lineno}: .{node.attr}")
    return found


def test_raw_record_reads_outside_runtime_context_stay_at_zero():
    found = raw_reads()
    assert len(found) <= ALLOWED_RAW_READS, (
        "read config through get_<namespace>() bags instead:\n" + "\n".join(found)
    )
