"""Refuses, before anything starts, an exec.kernel_isa this machine's CPU lacks (from /proc/cpuinfo, as the
kernels' own dispatch decides from CPUID). With parallel.backend ray the schedulers run elsewhere: there
each one refuses it itself."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from roles.scheduler.kernels.isa import missing_flags
from runtime_context.constraints import Constraint


def kernel_isa_problem(values: Mapping[str, Any]) -> str | None:
    path = values["exec.kernel_isa"]
    if path == "auto" or values["parallel.backend"] != "local":
        return None
    missing = missing_flags(path)
    if not missing:
        return None
    return f"this CPU lacks {', '.join(missing)}, which kernel path {path!r} needs; use auto or avx2"


KERNEL_ISA_ON_THIS_CPU = Constraint(
    ("exec.kernel_isa", "parallel.backend"),
    lambda values: kernel_isa_problem(values) is None,
    lambda values: str(kernel_isa_problem(values)),
)
