"""bench/reference_server.py's note on Python bytecode, printed beside start-up figures: without bytecode every
start compiles each process's modules again."""

from __future__ import annotations

from bench.reference_server import bytecode_note


def test_the_note_says_when_bytecode_is_not_written():
    assert "not written" in bytecode_note({"PYTHONDONTWRITEBYTECODE": "1"})
    assert "slower than a normal install" in bytecode_note({"PYTHONDONTWRITEBYTECODE": "x"})


def test_an_unset_or_empty_variable_writes_bytecode_as_python_does():
    assert bytecode_note({}).startswith("Python bytecode: written")
    assert bytecode_note({"PYTHONDONTWRITEBYTECODE": ""}).startswith("Python bytecode: written")
