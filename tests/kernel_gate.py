"""Tests of the CPU kernels run where the kernel library loads. A CPU without the instructions the kernels
need skips them, naming what it lacks; a library that is not built or does not load is a skip elsewhere and
a failure in CI (CI_NO_SKIP, tests/conftest.py), where only a CPU's lack may skip."""

from __future__ import annotations

import pytest

from roles.scheduler.kernels import native
from roles.scheduler.kernels.isa import ISA_FLAGS, missing_flags

REASON = native.unavailable_reason()
needs_kernels = pytest.mark.skipif(REASON is not None, reason=f"CPU kernels unavailable: {REASON}")


@pytest.fixture(params=list(ISA_FLAGS))
def kernel_isa(request):
    """Runs the test once per instruction-set path of the kernels, on that path; a path this CPU lacks skips,
    naming what it lacks."""
    missing = missing_flags(request.param)
    if missing:
        pytest.skip(f"this CPU lacks {', '.join(missing)} (kernel path {request.param})")
    native.select_isa(request.param)
    yield request.param
    native.select_isa("auto")


@pytest.fixture(autouse=True)
def float32_activations_after():
    """An engine sets the kernels' activation dtype process-wide (exec.activation_dtype): each test starts
    from the library's own, float32, whatever the test before it built."""
    yield
    if REASON is None:
        native.set_activation_dtype("float32")
