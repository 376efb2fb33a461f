"""How this scheduler runs its model's weights: one log line per tensor type, a warning naming every tensor on
a slower path and why, and the rows it states in its inspect answers (``/roles``); and which instruction set
its CPU kernels run."""

from __future__ import annotations

import logging

from roles.model_files.weight_formats import format_rows, model_tensors, slower_tensors
from roles.scheduler.kernels import native
from roles.scheduler.kernels.isa import activations_in_effect, kernel_path_fact
from roles.scheduler.loading.weight_mode import runnable_weight_dtype

log = logging.getLogger("roleserve.scheduler")
_NAMED = 12  # slower tensors named in the warning; the rest are counted


def report_weight_formats(model_path: str, weight_dtype: str) -> list[dict]:
    runnable = runnable_weight_dtype(weight_dtype)
    tensors = model_tensors(model_path)
    rows = format_rows(tensors, runnable)
    log.info(
        "weights (exec.weight_dtype %s): %s",
        runnable,
        "; ".join(f"{row.type_name} x{row.tensors} as {row.runs_as}" for row in rows),
    )
    slower = slower_tensors(tensors, runnable)
    if slower:
        named = "; ".join(f"{name}: {how}" for name, how in slower[:_NAMED])
        more = f"; and {len(slower) - _NAMED} more" if len(slower) > _NAMED else ""
        log.warning("%d weight tensors run on a slower path: %s%s", len(slower), named, more)
    return [row.as_fact() for row in rows]


def report_kernel_path(setting: str, weight_dtype: str) -> list[dict]:
    """The scheduler's inspect row for its CPU kernels (kernel_path_fact), logged once when they run."""
    if native.unavailable_reason() is not None:
        return kernel_path_fact(setting, weight_dtype, None, [], "float32")
    have = [path for path in native.isa_paths() if native.isa_available(path)]
    activations = native.activation_dtype()
    if weight_dtype == "auto":
        log.info(
            "CPU kernels: %s (exec.kernel_isa %s; this CPU has %s), %s activations for quantised weights",
            native.selected_isa(),
            setting,
            have,
            activations_in_effect(activations, native.selected_isa()),
        )
    return kernel_path_fact(setting, weight_dtype, native.selected_isa(), have, activations)
