"""The scheduler's recorder and balancedness tracker, chosen once from its published exec.moe bag."""

from __future__ import annotations

import os
import tempfile
from typing import TYPE_CHECKING

from roles.scheduler.expert_stats.noop_recorder import NoopRecorder
from runtime_context import (
    exports_expert_balancedness_to_prometheus,
    get_exec,
    logs_expert_balancedness_to_server_log,
    reports_expert_balancedness,
)

if TYPE_CHECKING:  # a dense model's scheduler (no placement) never imports them, nor torch through them
    from roles.scheduler.expert_stats.reporter import BalancednessReporter
    from roles.scheduler.moe.placement import ExpertPlacement


def recorder_from_context(placement: ExpertPlacement | None, counts_needed: bool = False) -> NoopRecorder:
    """NoopRecorder for a dense model or mode off; any balancedness report mode but off, or a rank that
    can rebalance (counts_needed), needs at least stat."""
    moe = get_exec().moe
    mode = moe.expert_distribution_recorder_mode
    if mode == "off" and (counts_needed or reports_expert_balancedness()):
        mode = "stat"
    if placement is None:
        return NoopRecorder()
    from roles.scheduler.expert_stats.recorder import make_recorder

    return make_recorder(mode, placement, moe.expert_distribution_recorder_buffer_size)


def reporter_from_context(placement: ExpertPlacement | None) -> BalancednessReporter | None:
    """None for a dense model or report mode off."""
    if placement is None or not reports_expert_balancedness():
        return None
    from roles.scheduler.expert_stats import reporter

    log_every = (
        get_exec().moe.expert_balancedness_log_every if logs_expert_balancedness_to_server_log() else None
    )
    return reporter.BalancednessReporter(
        placement, log_every, exports=exports_expert_balancedness_to_prometheus()
    )


def recorder_dir_from_context() -> str:
    configured = get_exec().moe.recorder_dir
    return configured or os.path.join(tempfile.gettempdir(), "roleserve-expert-distribution")


def rebalance_settings_from_context():
    from roles.scheduler.expert_parallel.rebalance import RebalanceSettings

    moe = get_exec().moe
    return RebalanceSettings(
        num_redundant=moe.num_redundant_experts,
        interval_passes=moe.eplb_rebalance_interval_passes,
        min_balancedness=moe.eplb_min_rebalance_balancedness,
        window_passes=moe.eplb_window_passes,
    )
