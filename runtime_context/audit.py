"""`serve roles audit`: from record-mode reads, the namespaces each role actually read vs its projection."""

from __future__ import annotations

from typing import Any

from runtime_context.settings import NAMESPACES


def audit(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per role: declared, read, and the minimal projection the reads support."""
    by_role: dict[str, dict[str, Any]] = {}
    for entry in entries:
        if "projection" not in entry:
            continue
        row = by_role.setdefault(
            entry["role"],
            {"role": entry["role"], "declared": set(entry["projection"]), "read": set(), "modes": set()},
        )
        row["modes"].add(entry["mode"])
        row["read"].update(read["namespace"] for read in entry.get("reads", []))
    rows = []
    for row in by_role.values():
        ordered = [ns for ns in NAMESPACES if ns in row["read"]]
        rows.append(
            {
                "role": row["role"],
                "modes": sorted(row["modes"]),
                "declared": [ns for ns in NAMESPACES if ns in row["declared"]],
                "read": ordered,
                "read_outside_projection": [ns for ns in ordered if ns not in row["declared"]],
                "declared_never_read": [
                    ns for ns in NAMESPACES if ns in row["declared"] and ns not in row["read"]
                ],
                "proposed_projection": ordered,
            }
        )
    return rows


def render_audit(rows: list[dict[str, Any]]) -> str:
    lines = []
    for row in rows:
        lines.append(f"== role {row['role']}  (mode {', '.join(row['modes'])})")
        if "record" not in row["modes"]:
            lines.append("   reads are recorded only in record mode (roles.enforcement: record)")
        lines.append(f"   declared:  {', '.join(row['declared']) or '(nothing)'}")
        lines.append(f"   read:      {', '.join(row['read']) or '(nothing)'}")
        if row["read_outside_projection"]:
            lines.append(
                f"   OUTSIDE:   {', '.join(row['read_outside_projection'])}  (enforce mode would refuse these)"
            )
        lines.append(f"   unused:    {', '.join(row['declared_never_read']) or '(none)'}")
        lines.append(f"   proposed:  {', '.join(row['proposed_projection']) or '(nothing)'}")
    return "\n".join(lines) + "\n"
