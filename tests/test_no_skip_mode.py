"""Where CI_NO_SKIP=1 (CI), a skip fails the run, but one naming a CPU's lack; elsewhere skips
stay skips."""

from __future__ import annotations

import pytest

from tests.guards.project_files import ROOT

pytest_plugins = ["pytester"]

SKIPPING_TESTS = """
import pytest

def test_missing_package():
    pytest.skip("no module named foo")

def test_missing_instructions():
    pytest.skip("CPU kernels unavailable: this CPU lacks avx2")
"""


@pytest.mark.parametrize(("no_skip", "failed", "skipped"), [("1", 1, 1), ("0", 0, 2)])
def test_skips_fail_where_no_skip_is_set(pytester, monkeypatch, no_skip, failed, skipped):
    monkeypatch.setenv("CI_NO_SKIP", no_skip)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    pytester.makeconftest("from tests.conftest import pytest_collectreport, pytest_runtest_makereport\n")
    pytester.makepyfile(test_skipping=SKIPPING_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=failed, skipped=skipped)
