"""Fixtures shared by every test: process-global config state is reset around each test."""

from __future__ import annotations

import pytest
from prometheus_client import values

from runtime_context import reset_context
from tests.extra_setting import moe_recorder  # noqa: F401  (a fixture for every test)


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
