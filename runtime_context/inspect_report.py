"""What each role sees, leaf by leaf, with provenance: one format for offline (`--config`) and live (`--url`)."""

from __future__ import annotations

import json
from typing import Any

from runtime_context.context import RuntimeContext
from runtime_context.projections import check_projection, ordered
from runtime_context.record import WITHHELD, ResolvedConfig, shown_value
from runtime_context.setting import SECRET_MASK
from runtime_context.settings import SETTINGS
from runtime_context.view import ProjectionView


def offline_entry(
    resolved: ResolvedConfig, role: str, projection: frozenset[str], facts: dict[str, Any] | None = None
) -> dict[str, Any]:
    """What a process of `role` (with this projection) WOULD see if started with this resolved config;
    ``facts``: what such a process would build from it (e.g. how the scheduler would run the weights)."""
    view = ProjectionView(role, check_projection(role, projection), resolved.raw_value("roles.enforcement"))
    resolved = resolved.for_projection(view.allowed)  # exactly the record such a process would receive
    leaves = [
        {"key": key, "value": resolved.display_value(key), "source": resolved.display_source(key)}
        for key, setting in SETTINGS.items()
        if setting.namespace in view.visible
    ]
    return {
        "role": role,
        "instance": None,
        "pid": None,
        "published_at": None,
        "fingerprint": resolved.fingerprint,
        "mode": view.mode,
        "projection": ordered(view.allowed),
        "leaves": leaves,
        "overrides": [],
        "reads": [],
        "facts": facts or {},
    }


def live_entry(
    context: RuntimeContext, instance: int | None = None, facts: dict[str, Any] | None = None
) -> dict[str, Any]:
    """What THIS process actually published (answers the launcher's inspect request), and the ``facts`` it
    states about what it built from it (JSON values: how the scheduler runs its weights, ...)."""
    view = context._require_published()
    assert context.resolved is not None
    resolved = context.resolved
    leaves = [
        {
            "key": key,
            "value": shown_value(key, context.current_value(key)) if resolved.has(key) else WITHHELD,
            "source": str(context.current_source(key)) if resolved.has(key) else WITHHELD,
        }
        for key, setting in SETTINGS.items()
        if setting.namespace in view.visible
    ]
    reads = [
        {"role": role, "namespace": ns, "leaf": leaf, "site": site, "count": count}
        for role, ns, leaf, site, count in context.recorded_reads()
    ]
    return {
        "role": context.publish_role,
        "instance": instance,
        "pid": context.published_pid,
        "published_at": context.published_at,
        "fingerprint": context.fingerprint,
        "mode": view.mode,
        "projection": ordered(view.allowed),
        "leaves": leaves,
        "overrides": [entry.shown() for entry in context.overrides_log()],
        "reads": reads,
        "facts": facts or {},
    }


def render_json(entries: list[dict[str, Any]]) -> str:
    return json.dumps({"processes": entries}, indent=2, sort_keys=False)


def render_table(entries: list[dict[str, Any]]) -> str:
    lines: list[str] = []
    for entry in entries:
        who = entry["role"] if entry.get("instance") is None else f"{entry['role']}[{entry['instance']}]"
        if "error" in entry:
            lines += [f"== role {who}: {entry['error']}", ""]
            continue
        pid = f"  pid {entry['pid']}" if entry["pid"] is not None else ""
        lines.append(f"== role {who}{pid}  mode {entry['mode']}  fingerprint {entry['fingerprint'][:16]}")
        lines.append(f"   projection: {', '.join(entry['projection']) or '(nothing)'}")
        width = max((len(leaf["key"]) for leaf in entry["leaves"]), default=0)
        value_width = min(40, max((len(_cell(leaf["value"])) for leaf in entry["leaves"]), default=0))
        for leaf in entry["leaves"]:
            lines.append(
                f"   {leaf['key']:<{width}}  {_cell(leaf['value']):<{value_width}}  {leaf['source']}"
            )
        for override in entry["overrides"]:
            lines.append(
                f"   override {override['key']}: {override['old']!r} -> {override['new']!r} by {override['source']}"
            )
        for read in entry["reads"]:
            lines.append(f"   read {read['namespace']}.{read['leaf']} x{read['count']} at {read['site']}")
        lines += _fact_lines(entry.get("facts") or {})
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def _fact_lines(facts: dict[str, Any]) -> list[str]:
    """A fact is a value, or a list of rows (dicts) shown one per line with their fields."""
    lines = []
    for name, value in facts.items():
        if isinstance(value, list) and value and all(isinstance(row, dict) for row in value):
            cells = [[_cell(cell) for cell in row.values()] for row in value]
            widths = [max(len(row[i]) for row in cells if i < len(row)) for i in range(max(map(len, cells)))]
            lines.append(f"   {name}:")
            lines += [
                "     " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)).rstrip()
                for row in cells
            ]
        else:
            lines.append(f"   {name}: {_cell(value)}")
    return lines


def render_resolved_table(resolved: ResolvedConfig) -> str:
    width = max(len(key) for key in SETTINGS)
    value_width = min(40, max(len(_cell(resolved.display_value(key))) for key in SETTINGS))
    lines = [f"fingerprint {resolved.fingerprint}"]
    for key in SETTINGS:
        lines.append(
            f"{key:<{width}}  {_cell(resolved.display_value(key)):<{value_width}}  {resolved.source(key)}"
        )
    return "\n".join(lines) + "\n"


def resolved_json(resolved: ResolvedConfig) -> str:
    leaves = [
        {"key": key, "value": resolved.display_value(key), "source": resolved.display_source(key)}
        for key in SETTINGS
    ]
    return json.dumps({"fingerprint": resolved.fingerprint, "leaves": leaves}, indent=2)


def _cell(value: Any) -> str:
    return json.dumps(value) if not isinstance(value, str) or value == SECRET_MASK else value
