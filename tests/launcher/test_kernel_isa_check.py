"""exec.kernel_isa: a path this CPU lacks is refused before anything starts (exit 2, naming the flags it
lacks); one it has is valid. Run for every path, so each machine checks the answer its CPU calls for."""

from __future__ import annotations

import pytest

from launcher.kernel_isa_check import kernel_isa_problem
from roles.scheduler.kernels.isa import ISA_FLAGS, missing_flags
from tests.launcher.serve_command import run_serve


@pytest.mark.parametrize("path", list(ISA_FLAGS))
def test_a_forced_kernel_path_is_valid_exactly_where_the_cpu_has_it(path):
    result = run_serve("config", "validate", "--set", f"exec.kernel_isa={path}")
    missing = missing_flags(path)
    if missing:
        assert result.returncode == 2, result.stdout + result.stderr
        assert f"this CPU lacks {', '.join(missing)}, which kernel path '{path}' needs" in result.stderr
    else:
        assert result.returncode == 0, result.stderr


def test_ray_schedulers_check_the_path_on_their_own_machines():
    for path in ISA_FLAGS:
        assert kernel_isa_problem({"exec.kernel_isa": path, "parallel.backend": "ray"}) is None
