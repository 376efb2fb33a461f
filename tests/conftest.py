"""Fixtures shared by every test: process-global config state is reset around each test."""

from __future__ import annotations

import os

import pytest
from prometheus_client import values

from runtime_context import reset_context
from tests.bundled_reference import smollm2_reference_tokenizer  # noqa: F401  (a session fixture)
from tests.extra_setting import moe_recorder  # noqa: F401  (a fixture for every test)

# kernel_isa: a fixture, once per kernel instruction-set path; float32_activations_after: for every test.
from tests.kernel_gate import float32_activations_after, kernel_isa  # noqa: F401


@pytest.fixture(autouse=True)
def _fresh_runtime_context():
    reset_context()
    yield
    reset_context()


@pytest.fixture(autouse=True)
def _fresh_prometheus_mode(monkeypatch):
    """A tokenizer's metrics switch prometheus_client to multiprocess mode in a dir of the test's: undone after."""
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    monkeypatch.setattr(values, "ValueClass", values.ValueClass)


# CI installs every test dependency and builds the kernels, so there a skip is a failure, unless the machine
# itself lacks what the test needs (a CPU instruction set), which such a skip says with "this CPU lacks".
# (Not a ROLESERVE_ variable: `serve`, started by e2e tests, reads those as settings.)
NO_SKIP = os.environ.get("CI_NO_SKIP") == "1"
HARDWARE_SKIP = "this CPU lacks"


def _refuse_skip(report) -> None:
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    if HARDWARE_SKIP not in reason:
        report.outcome = "failed"
        report.longrepr = f"skipped where CI_NO_SKIP=1 (nothing may skip but a CPU's lack): {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if NO_SKIP and report.skipped and not hasattr(report, "wasxfail"):
        _refuse_skip(report)


def pytest_collectreport(report):
    if NO_SKIP and report.skipped:
        _refuse_skip(report)
