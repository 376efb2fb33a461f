"""Read a --config YAML file into (key, value, file:line:col) assignments, keeping every problem."""

from __future__ import annotations

import yaml

from runtime_context.assignment import Assignment
from runtime_context.problems import ConfigProblem, did_you_mean
from runtime_context.provenance import file_source
from runtime_context.setting import SettingValueError
from runtime_context.settings import NAMESPACES, SETTINGS, child_namespaces, settings_in, top_namespaces

# Limits of what a config file may be: a config is a few hundred short lines.
MAX_CONFIG_BYTES = 1 << 20
MAX_NESTING = 32  # namespaces and values nest a few levels deep
MAX_NODES = 100_000  # nodes after aliases are followed: an alias bomb is refused, not expanded
# The tags a config may carry: plain YAML values (the safe loader's own); anything else is refused, not
# dropped.
_TAGS = {
    f"tag:yaml.org,2002:{name}"
    for name in ("str", "int", "float", "bool", "null", "map", "seq", "timestamp", "binary", "merge")
}


def read_yaml_config(path: str) -> tuple[list[Assignment], list[ConfigProblem]]:
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read(MAX_CONFIG_BYTES + 1)
    except FileNotFoundError:
        return [], [ConfigProblem(path, "", "config file not found")]
    except (OSError, UnicodeDecodeError) as exc:
        return [], [ConfigProblem(path, "", f"cannot read config file: {exc}")]
    if len(text) > MAX_CONFIG_BYTES:
        return [], [ConfigProblem(path, "", f"config file is larger than {MAX_CONFIG_BYTES} bytes")]
    loader = yaml.SafeLoader(text)
    try:
        root = loader.get_single_node()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else path
        return [], [ConfigProblem(where, "", f"invalid YAML: {_reason(exc)}")]
    except RecursionError:
        return [], [ConfigProblem(path, "", f"invalid YAML: nested more than {MAX_NESTING} levels deep")]
    finally:
        loader.dispose()
    if root is None:  # an empty file is an empty config
        return [], []
    shape_problem = _shape_problem(path, root)
    if shape_problem is not None:
        return [], [shape_problem]
    reader = _NodeReader(path, yaml.SafeLoader(""))
    reader.read_namespace_map(root, "")
    return reader.assignments, reader.problems


class _NodeReader:
    def __init__(self, path: str, loader: yaml.SafeLoader):
        self.path = path
        self.loader = loader
        self.assignments: list[Assignment] = []
        self.problems: list[ConfigProblem] = []

    def where(self, node: yaml.Node) -> str:
        return f"{self.path}:{node.start_mark.line + 1}:{node.start_mark.column + 1}"

    def tag_problem(self, node: yaml.Node, key: str) -> bool:
        """A tag that is not a plain YAML value anywhere in ``node``: a problem naming the key (True)."""
        stack = [node]
        while stack:
            current = stack.pop()
            if current.tag not in _TAGS:
                self.problems.append(
                    ConfigProblem(
                        self.where(current),
                        key,
                        f"unsupported YAML tag {current.tag!r}: a config holds plain values",
                    )
                )
                return True
            if isinstance(current, yaml.SequenceNode):
                stack.extend(current.value)
            elif isinstance(current, yaml.MappingNode) and current is not node:
                stack.extend(child for pair in current.value for child in pair)
        return False

    def read_namespace_map(self, node: yaml.Node, namespace: str) -> None:
        label = f"namespace {namespace}" if namespace else "the top level of a config file"
        if self.tag_problem(node, namespace):
            return
        if not isinstance(node, yaml.MappingNode):
            self.problems.append(ConfigProblem(self.where(node), namespace, f"{label} must be a mapping"))
            return
        children = child_namespaces(namespace) if namespace else top_namespaces()
        leaves = {s.name: s for s in settings_in(namespace)} if namespace else {}
        seen: dict[str, yaml.Node] = {}
        for key_node, value_node in node.value:
            name = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            full = f"{namespace}.{name}" if namespace else name
            if name is None:
                self.problems.append(
                    ConfigProblem(self.where(key_node), namespace, "keys must be plain names")
                )
                continue
            if name in seen:
                first = seen[name].start_mark.line + 1
                self.problems.append(
                    ConfigProblem(self.where(key_node), full, f"duplicate key (first given on line {first})")
                )
                continue
            seen[name] = key_node
            if full in NAMESPACES:
                self.read_namespace_map(value_node, full)
            elif name in leaves:
                self.read_leaf(leaves[name].key, value_node)
            else:
                options = [c.rsplit(".", 1)[-1] for c in children] + list(leaves)
                kind = "namespace" if not namespace else "key"
                hint = did_you_mean(name, options) or _other_namespace_hint(name)
                self.problems.append(ConfigProblem(self.where(key_node), full, f"unknown {kind}{hint}"))

    def read_leaf(self, key: str, node: yaml.Node) -> None:
        setting = SETTINGS[key]
        if self.tag_problem(node, key):
            return
        try:
            raw = self.loader.construct_object(node, deep=True)
        except (yaml.YAMLError, ValueError) as exc:  # ValueError: e.g. a date like 2001-13-45
            self.problems.append(ConfigProblem(self.where(node), key, f"invalid value: {_reason(exc)}"))
            return
        try:
            value = setting.check(raw)
        except SettingValueError as exc:
            self.problems.append(ConfigProblem(self.where(node), key, str(exc)))
            return
        self.assignments.append(Assignment(key, value, file_source(self.path, *_line_col(node))))


def _shape_problem(path: str, root: yaml.Node) -> ConfigProblem | None:
    """Too deep, or too many nodes once aliases are followed."""
    count = 0
    stack = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        count += 1
        where = f"{path}:{node.start_mark.line + 1}:{node.start_mark.column + 1}"
        if count > MAX_NODES:
            return ConfigProblem(path, "", f"more than {MAX_NODES} values once aliases are expanded")
        if depth > MAX_NESTING:
            return ConfigProblem(where, "", f"nested more than {MAX_NESTING} levels deep")
        if isinstance(node, yaml.SequenceNode):
            stack.extend((child, depth + 1) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            stack.extend((child, depth + 1) for pair in node.value for child in pair)
    return None


def _reason(exc: Exception) -> str:
    """Why YAML refused, without the quoted source line (which may hold a secret); where is said apart."""
    return getattr(exc, "problem", None) or str(exc)


def _line_col(node: yaml.Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


def _other_namespace_hint(name: str) -> str:
    """'max_running_requests' placed in the wrong namespace: say where it belongs."""
    homes = [s.key for s in SETTINGS.values() if s.name == name]
    return f" (did you mean {homes[0]}?)" if len(homes) == 1 else ""
