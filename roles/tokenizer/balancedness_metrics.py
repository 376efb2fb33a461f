"""Prometheus lines for expert balancedness, from each scheduler's latest load report: a summary
`roleserve_eplb_balancedness` (per-pass balancedness: _sum and _count), a gauge of its rolling means, and
a per-layer histogram `roleserve_eplb_tokens_per_rank` of the tokens each EP rank computed per pass; and the
counter `roleserve_eplb_rebalances_total` of expert rebalances, applied or skipped."""

from __future__ import annotations

from roles.protocol import LoadReport


def balancedness_lines(reports: dict[int, LoadReport]) -> str:
    lines = [
        "# HELP roleserve_eplb_balancedness Balancedness of expert-parallel work per forward pass (1 is even)",
        "# TYPE roleserve_eplb_balancedness summary",
    ]
    rolling = [
        "# HELP roleserve_eplb_balancedness_rolling Mean balancedness over the last N forward passes",
        "# TYPE roleserve_eplb_balancedness_rolling gauge",
    ]
    tokens = [
        "# HELP roleserve_eplb_tokens_per_rank Tokens each EP rank computed in one pass, per MoE layer",
        "# TYPE roleserve_eplb_tokens_per_rank histogram",
    ]
    for instance, report in sorted(reports.items()):
        stats = report.expert_balancedness
        if stats is None:
            continue
        who = f'role="scheduler",instance="{instance}"'
        lines.append(f"roleserve_eplb_balancedness_sum{{{who}}} {stats.balancedness_sum:g}")
        lines.append(f"roleserve_eplb_balancedness_count{{{who}}} {stats.num_passes}")
        rolling += [
            f'roleserve_eplb_balancedness_rolling{{{who},window="{window}"}} {value:g}'
            for window, value in stats.rolling.items()
        ]
        for layer, counts in enumerate(stats.layer_bucket_counts):
            running = 0
            for bound, count in zip((*stats.bucket_bounds, float("inf")), counts, strict=True):
                running += count
                le = "+Inf" if bound == float("inf") else f"{bound:g}"
                tokens.append(
                    f'roleserve_eplb_tokens_per_rank_bucket{{{who},layer="{layer}",le="{le}"}} {running}'
                )
            tokens.append(
                f'roleserve_eplb_tokens_per_rank_sum{{{who},layer="{layer}"}} {stats.layer_token_sums[layer]:g}'
            )
            tokens.append(f'roleserve_eplb_tokens_per_rank_count{{{who},layer="{layer}"}} {running}')
    return "\n".join(lines + rolling + tokens) + "\n"


def rebalance_lines(reports: dict[int, LoadReport]) -> str:
    """The rebalance counters of the schedulers that can rebalance; nothing when none can."""
    samples = [
        f'roleserve_eplb_rebalances_total{{role="scheduler",instance="{instance}",result="{result}"}} {count}'
        for instance, report in sorted(reports.items())
        if report.expert_rebalances is not None
        for result, count in sorted(report.expert_rebalances.items())
    ]
    if not samples:
        return ""
    header = [
        "# HELP roleserve_eplb_rebalances_total Expert rebalances over the expert-parallel ranks",
        "# TYPE roleserve_eplb_rebalances_total counter",
    ]
    return "\n".join(header + samples) + "\n"
