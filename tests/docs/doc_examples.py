"""The examples of the README and docs/: every command line, YAML block and environment example, found by
reading the pages as markdown (markdown-it), so tests can run or resolve each one.

- A code block is commands when its lines (after an optional `$ ` prompt, joined across trailing `\\`)
  start with a program; in a block with `$ ` prompts, the other lines are that command's output.
- A YAML block is a fenced `yaml` block, or an indented block that parses as a mapping of config
  namespaces.
- An environment example is `ROLESERVE_<NS>__<LEAF>=value`, in a command or in inline code.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

import yaml
from markdown_it import MarkdownIt

from runtime_context.settings import NAMESPACES
from tests.guards.project_files import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PROGRAMS = ("serve", "make", "curl", ".venv/bin/python", "llama-server", "docker", "kubectl", "pip", "flock")
ENVIRONMENT = re.compile(r"\bROLESERVE_[A-Z0-9_]+=\S+")


@dataclass(frozen=True)
class Example:
    page: str  # README.md, docs/x.md
    line: int  # 1-based, of the block's first line
    text: str

    def __str__(self) -> str:
        return f"{self.page}:{self.line}: {self.text.splitlines()[0][:90]}"


def _blocks():
    parser = MarkdownIt()
    for page in PAGES:
        name = page.relative_to(ROOT).as_posix()
        for token in parser.parse(page.read_text(encoding="utf-8")):
            if token.type in ("fence", "code_block"):
                yield name, token.map[0] + 1, token.info.strip(), token.content
            elif token.type == "inline":
                for child in token.children or []:
                    if child.type == "code_inline":
                        yield name, token.map[0] + 1, "inline", child.content


def _command_lines(content: str) -> list[str]:
    joined, pending = [], ""
    prompted = any(line.startswith("$ ") for line in content.splitlines())
    for raw in content.splitlines():
        line = raw.strip()
        if pending:
            line, pending = pending + " " + line, ""
        elif prompted:
            if not line.startswith("$ "):
                continue  # output
            line = line[2:]
        if line.endswith("\\"):
            pending = line[:-1].strip()
            continue
        if line.split(maxsplit=1)[:1] and line.split()[0] in PROGRAMS:
            joined.append(line.split(" #", 1)[0].strip())  # a trailing comment is prose
    return joined


def commands() -> list[Example]:
    found = []
    for page, line, info, content in _blocks():
        if info in ("", "sh", "bash", "console", "shell"):
            found += [Example(page, line, command) for command in _command_lines(content)]
    return found


def yaml_blocks() -> list[Example]:
    found = []
    for page, line, info, content in _blocks():
        if info == "yaml":
            found.append(Example(page, line, content))
        elif info == "" and content.strip():
            try:
                data = yaml.safe_load(content)
            except yaml.YAMLError:
                continue
            if isinstance(data, dict) and data and set(data) <= set(NAMESPACES):
                found.append(Example(page, line, content))
    return found


def environment_examples() -> list[Example]:
    found = []
    for page, line, _, content in _blocks():
        found += [Example(page, line, match) for match in ENVIRONMENT.findall(content)]
    return found


def split(command: str) -> list[str]:
    return shlex.split(command)
