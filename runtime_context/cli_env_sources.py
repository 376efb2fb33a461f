"""Environment (ROLESERVE_<NS>__<LEAF>) and command-line (--set ns.leaf=value, short flags) sources."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from runtime_context.assignment import Assignment
from runtime_context.problems import ConfigProblem, did_you_mean
from runtime_context.provenance import cli_source, env_source
from runtime_context.setting import ENV_PREFIX, SettingValueError
from runtime_context.settings import SETTINGS

# Short CLI flags and the setting each one sets.
SHORT_FLAGS: Mapping[str, str] = {
    "--model": "model.path",
    "--host": "http.host",
    "--port": "http.port",
    "--dp-size": "parallel.dp_size",
    "--log-level": "observability.log_level",
}

_ENV_NAMES = {s.env_name: s.key for s in SETTINGS.values()}


def read_environment(environ: Mapping[str, str]) -> tuple[list[Assignment], list[ConfigProblem]]:
    assignments, problems = [], []
    for name in sorted(environ):
        if not name.startswith(ENV_PREFIX):
            continue
        key = _ENV_NAMES.get(name)
        if key is None:
            hint = did_you_mean(name, _ENV_NAMES)
            problems.append(ConfigProblem(f"env {name}", "", f"unknown setting{hint}"))
            continue
        try:
            value = SETTINGS[key].parse(environ[name])
        except SettingValueError as exc:
            problems.append(ConfigProblem(f"env {name}", key, str(exc)))
            continue
        assignments.append(Assignment(key, value, env_source(name)))
    return assignments, problems


def read_cli(
    sets: Sequence[str], flags: Mapping[str, str | None]
) -> tuple[list[Assignment], list[ConfigProblem]]:
    """`sets` are the `--set` arguments in order; `flags` maps a short flag to its text (None if absent)."""
    assignments, problems = [], []
    for flag, key in SHORT_FLAGS.items():
        text = flags.get(flag)
        if text is None:
            continue
        try:
            assignments.append(Assignment(key, SETTINGS[key].parse(text), cli_source(flag)))
        except SettingValueError as exc:
            problems.append(ConfigProblem(f"cli {flag}", key, str(exc)))
    for number, item in enumerate(sets, 1):
        # Problems name the key, never the text given: it may be a secret (or a key misspelled near one).
        key, sep, text = item.partition("=")
        key = key.strip()
        where = f"cli --set {key}"
        if not sep:
            named = item.split(maxsplit=1)[0] if item.strip() else ""
            named = named if named in SETTINGS else ""  # else say only which --set it was
            where = f"cli --set {named or f'#{number}'}"
            problems.append(ConfigProblem(where, named, "expected --set namespace.key=value"))
            continue
        if key not in SETTINGS:
            problems.append(ConfigProblem(where, key, f"unknown setting{did_you_mean(key, SETTINGS)}"))
            continue
        try:
            assignments.append(Assignment(key, SETTINGS[key].parse(text), cli_source(f"--set {key}")))
        except SettingValueError as exc:
            problems.append(ConfigProblem(where, key, str(exc)))
    return assignments, problems
