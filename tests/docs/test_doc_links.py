"""Every link of the README and docs/ to a file of the repository names one that exists, and every link to a
section names a heading of that page, by the anchors GitHub gives headings (lower case, punctuation but
hyphens and underscores dropped, spaces to hyphens, "-1", "-2" after a repeated heading)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.guards.project_files import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} (.+?)\s*#*$", re.MULTILINE)
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def anchor(heading: str) -> str:
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for match in HEADING.finditer(FENCE.sub("", page.read_text())):
        name = anchor(match.group(1))
        count = seen.get(name, 0)
        seen[name] = count + 1
        found.add(name if count == 0 else f"{name}-{count}")
    return found


def test_anchors_follow_the_rules_of_the_headings_they_name():
    assert anchor("The linears against the int8 peak (`bench/linear_rate.py`, `bench/int8_peak.py`)") == (
        "the-linears-against-the-int8-peak-benchlinear_ratepy-benchint8_peakpy"
    )
    assert (
        anchor("Ready under a second on the Zen 3 (2026-12-07)")
        == "ready-under-a-second-on-the-zen-3-2026-12-07"
    )


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.relative_to(ROOT).as_posix())
def test_every_link_into_the_repository_finds_its_file_and_section(page):
    broken = []
    for target in LINK.findall(FENCE.sub("", page.read_text())):
        if re.match(r"[a-z]+:", target):  # https:, mailto: ...: outside the repository
            continue
        path, _, section = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            broken.append(f"{target}: no file {path}")
        elif section and linked.suffix == ".md" and section not in anchors(linked):
            broken.append(f"{target}: no heading of {linked.relative_to(ROOT)} has that anchor")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)
