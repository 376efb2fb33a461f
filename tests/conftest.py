"""Fixtures shared by every test: process-global config state is reset around each test."""

from __future__ import annotations

import pytest

from runtime_context import reset_context
from tests.extra_setting import moe_recorder  # noqa: F401  (a fixture for every test)


@pytest.fixture(autouse=True)
def _fresh_runtime_context():
    reset_context()
    yield
    reset_context()
