"""The kernels' instruction-set paths: the library's dispatch (CPUID) and the launcher's view (/proc/cpuinfo)
agree on what this CPU has, auto runs the widest float32 path (the library's own choice at load), a forced
path runs until changed, and one this CPU lacks is refused without changing the choice."""

from __future__ import annotations

import subprocess
import sys

import pytest

from roles.scheduler.kernels import native
from roles.scheduler.kernels.isa import (
    ISA_FLAGS,
    ROUNDS_TO_BF16,
    kernel_path_fact,
    missing_flags,
    path_for,
    paths_this_cpu_has,
)
from tests.kernel_gate import needs_kernels

pytestmark = needs_kernels


def test_the_library_carries_every_path_the_launcher_knows_in_the_same_order():
    assert native.isa_paths() == list(ISA_FLAGS)


@pytest.mark.parametrize("path", list(ISA_FLAGS))
def test_cpuid_and_proc_cpuinfo_agree_on_each_path(path):
    assert native.isa_available(path) == (not missing_flags(path))


def test_the_library_chooses_at_load_what_auto_chooses():
    """In a fresh process, where nothing has selected a path yet."""
    code = "from roles.scheduler.kernels import native; print(native.selected_isa())"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == path_for("auto")


def test_auto_runs_the_widest_float32_path_this_cpu_has():
    native.select_isa("auto")
    widest = [path for path in paths_this_cpu_has() if path not in ROUNDS_TO_BF16][-1]
    assert native.selected_isa() == widest == path_for("auto")


@pytest.mark.parametrize("path", list(ISA_FLAGS))
def test_a_forced_path_runs_or_is_refused_where_the_cpu_lacks_it(path):
    native.select_isa("avx2")
    try:
        if native.isa_available(path):
            native.select_isa(path)
            assert native.selected_isa() == path == path_for(path)
        else:
            with pytest.raises(ValueError, match=f"lacks the instructions of kernel path '{path}'"):
                native.select_isa(path)
            assert native.selected_isa() == "avx2" and path_for(path) is None
    finally:
        native.select_isa("auto")


def test_an_unknown_path_is_refused():
    with pytest.raises(ValueError, match="no kernel path 'sse2'"):
        native.select_isa("sse2")


@pytest.mark.parametrize(
    "path, shown",
    [
        ("avx512vnni", "int8 from 16 rows, int16 below (quantised weights)"),
        ("avx512bf16", "int8 from 16 rows, int16 below (quantised weights)"),
        ("avx512", "int16 (int8 tiles: avx2, avx512vnni) (quantised weights)"),
        (
            "avx2",
            "int8 from 16 rows where the quantised parts' codes fit 6 bits (not Q8_0, IQ4_NL, IQ4_XS), and below"
            " 16 where they also pack (not Q2_K, Q3_K); int16 else (quantised weights)",
        ),
    ],
)
def test_inspect_says_where_int8_activations_run_as_int16(path, shown):
    [fact] = kernel_path_fact("auto", "auto", path, [path], "int8")
    assert fact["activations"] == shown
    [fact] = kernel_path_fact("auto", "auto", path, [path], "int16")
    assert fact["activations"] == "int16 (quantised weights)"


@pytest.mark.parametrize(
    "path, shown",
    [
        (
            "avx512vnni",
            "o_proj, down_proj: int8 from 16 rows, int16 below; the rest int16 (quantised weights)",
        ),
        ("avx512", "int16 (int8 tiles: avx2, avx512vnni) (quantised weights)"),
    ],
)
def test_inspect_says_which_linears_mixed_gives_int8(path, shown):
    [fact] = kernel_path_fact("auto", "auto", path, [path], "mixed")
    assert fact["activations"] == shown
