"""Tests of the CPU kernels run where the kernel library loads. A CPU without the instructions the kernels
need skips them, naming what it lacks; a library that is not built or does not load is a skip elsewhere and
a failure in CI (CI_NO_SKIP, tests/conftest.py), where only a CPU's lack may skip."""

from __future__ import annotations

import pytest

from roles.scheduler.kernels import native

REASON = native.unavailable_reason()
needs_kernels = pytest.mark.skipif(REASON is not None, reason=f"CPU kernels unavailable: {REASON}")
