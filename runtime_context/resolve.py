"""Resolution: defaults < --config YAML < environment < CLI, then derived leaves, then cross-field checks."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from runtime_context.cli_env_sources import read_cli, read_environment
from runtime_context.constraints import Constraint, check_constraints
from runtime_context.derivation import BUILTIN_RULES, DerivationFailed, DerivationRule
from runtime_context.problems import ConfigError, ConfigProblem
from runtime_context.provenance import DEFAULT, Source, derived_source
from runtime_context.record import ResolvedConfig
from runtime_context.settings import SETTINGS


def resolve(
    config_path: str | None = None,
    sets: Sequence[str] = (),
    flags: Mapping[str, str | None] | None = None,
    environ: Mapping[str, str] | None = None,
    rules: Sequence[DerivationRule] = BUILTIN_RULES,
    constraints: Sequence[Constraint] = (),
) -> ResolvedConfig:
    """Resolve every leaf once, or raise ConfigError listing every problem found."""
    values = {key: setting.default for key, setting in SETTINGS.items()}
    sources: dict[str, Source] = dict.fromkeys(SETTINGS, DEFAULT)
    problems: list[ConfigProblem] = []

    layers = []
    if config_path is not None:
        from runtime_context.yaml_source import read_yaml_config  # YAML's reader only where a file is read

        layers.append(read_yaml_config(config_path))
    layers.append(read_environment(os.environ if environ is None else environ))
    layers.append(read_cli(sets, flags or {}))
    for assignments, layer_problems in layers:
        problems.extend(layer_problems)
        for assignment in assignments:
            values[assignment.key] = assignment.value
            sources[assignment.key] = assignment.source
    if problems:
        raise ConfigError(problems)

    for rule in rules:
        if not rule.applies(values):
            continue
        try:
            value = SETTINGS[rule.target].check(rule.compute(values))
        except DerivationFailed as failure:
            origin = sources[failure.key]
            where = origin.detail if origin.kind == "file" else str(origin)
            problem = ConfigProblem(where, failure.key, str(failure))
            if problem not in problems:  # two rules reading one broken input report it once
                problems.append(problem)
            continue
        values[rule.target] = value
        sources[rule.target] = derived_source(rule.name, rule.inputs)
    problems.extend(check_constraints(values, sources, constraints))
    if problems:
        raise ConfigError(problems)
    return ResolvedConfig(values, sources)
