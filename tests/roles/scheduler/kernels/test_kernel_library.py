"""The kernel library is built by the install and loads on this CPU; only a CPU that lacks the instructions
it needs may skip this (CI fails on any other skip)."""

from __future__ import annotations

import pytest

from roles.scheduler.kernels import native


def test_the_kernel_library_loads():
    reason = native.unavailable_reason()
    if reason is not None and reason.startswith("this CPU lacks"):
        pytest.skip(reason)
    assert reason is None, f"auto would run as exact: {reason}"
