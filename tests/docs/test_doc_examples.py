"""Every shell command, YAML block and environment example of the README and docs/ is run or resolved, so
the pages cannot drift from the code:

- `serve ...` parses with the real CLI; its --config (where the page names a file of the repository),
  --set values and short flags resolve (the model file aside: a page's model path is a placeholder);
  read-only commands on the repository's own files run for real and succeed.
- `make T`: T is a target of the Makefile. `.venv/bin/python bench/X.py`: the script exists and every
  option the page gives it is one its --help lists.
- `curl`: the method and path are a route of the HTTP API, and a JSON body is valid by its OpenAPI schema.
- A YAML block of config namespaces resolves as a --config file; an environment example resolves.
- Other programs (llama-server, docker, kubectl, pip) are references: every repository path they name
  exists, and a command run under `flock` is checked as itself.
"""

from __future__ import annotations

import functools
import json
import re
import subprocess
import sys

import jsonschema
import pytest

from launcher.cli import build_parser, resolve_from_args
from runtime_context import resolve
from tests.docs.doc_examples import commands, environment_examples, split, yaml_blocks
from tests.guards.project_files import ROOT

COMMANDS = commands()
SERVE = str(ROOT / ".venv" / "bin" / "serve")
READ_ONLY = (("config", "validate"), ("config", "show"), ("roles", "list"), ("roles", "inspect"))
CHOICES = re.compile(r"[\w.-]+(\|[\w.-]+)+")
REPO_PATH = re.compile(r"^(deploy|bench|docs|roles|launcher|runtime_context|tests)/\S+")


def _program(argv: list[str]) -> list[str]:
    """The command itself: `flock LOCK cmd ...` is `cmd ...`."""
    while argv and argv[0] == "flock":
        argv = [word for word in argv[1:] if not word.startswith("-")][1:]
    return argv


def _by_program(name: str) -> list:
    return [c for c in COMMANDS if _program(split(c.text))[:1] == [name]]


def test_the_pages_have_examples_to_check():
    assert len(COMMANDS) >= 20 and len(yaml_blocks()) >= 3 and environment_examples()
    assert {"serve", "make", "curl", ".venv/bin/python"} <= {_program(split(c.text))[0] for c in COMMANDS}


def _synopsis_argv(text: str) -> list[str]:
    """A usage line as the command it shows most plainly: optional ``[...]`` parts left out, the first of
    ``a|b`` alternatives taken."""
    plain = re.sub(r"\s*\[[^\]]*\]", "", text)
    return [word.split("|")[0] if CHOICES.fullmatch(word) else word for word in _program(split(plain))[1:]]


@pytest.mark.parametrize("example", _by_program("serve"), ids=str)
def test_serve_commands_parse_and_resolve(example, tmp_path):
    argv = _synopsis_argv(example.text)
    if argv == ["--help"]:
        assert subprocess.run([SERVE, "--help"], capture_output=True, timeout=120).returncode == 0
        return
    args = build_parser().parse_args(argv)  # SystemExit on a flag or command the CLI does not have
    config = getattr(args, "config", None)
    model = getattr(args, "model", None)
    files_exist = (config is None or (ROOT / config).is_file()) and model in (None, "smollm2")
    if not files_exist:  # a placeholder file: the settings alone must resolve
        if config is not None:
            args.config = None
        args.model = None
        resolve_from_args(args)
        return
    if config is not None:
        args.config = str(ROOT / config)
    resolve_from_args(args)
    if tuple(argv[:2]) in READ_ONLY and "--url" not in argv:
        result = subprocess.run([SERVE, *argv], cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr


@functools.cache
def _make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    return {m.group(1) for m in re.finditer(r"^([A-Za-z][\w-]*):", text, re.MULTILINE)}


@pytest.mark.parametrize("example", _by_program("make"), ids=str)
def test_make_targets_exist(example):
    targets = [
        word for word in _program(split(example.text))[1:] if not word.startswith("-") and "=" not in word
    ]
    assert targets and set(targets) <= _make_targets()


@functools.cache
def _help_of(script: str) -> str:
    result = subprocess.run(
        [sys.executable, script, "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("example", _by_program(".venv/bin/python"), ids=str)
def test_bench_commands_name_a_script_and_its_options(example):
    argv = _program(split(example.text))
    script = argv[1]
    assert (ROOT / script).is_file(), script
    help_text = _help_of(script)
    for option in (word.split("=")[0] for word in argv[2:] if word.startswith("--")):
        assert option in help_text, f"{script} has no option {option}"


@functools.cache
def _openapi() -> dict:
    from roles.tokenizer.app import create_app

    return create_app(None).openapi()


def _route(path: str) -> str | None:
    for template in _openapi()["paths"]:
        if re.fullmatch(re.sub(r"\{[^}]+\}", "[^/]+", template), path):
            return template
    return None


@pytest.mark.parametrize("example", _by_program("curl"), ids=str)
def test_curl_commands_name_a_route_and_a_valid_body(example):
    argv = _program(split(example.text))
    body = next((argv[i + 1] for i, word in enumerate(argv) if word in ("-d", "--data")), None)
    explicit = next((argv[i + 1] for i, word in enumerate(argv) if word == "-X"), None)
    method = (explicit or ("POST" if body is not None else "GET")).lower()
    url = next(word for word in argv[1:] if "/" in word and not word.startswith("-") and word != body)
    path = "/" + url.split("://", 1)[-1].split("/", 1)[1].split("?")[0]
    template = _route(path)
    assert template is not None, f"no route {path}"
    operation = _openapi()["paths"][template].get(method)
    assert operation is not None, f"{path} takes no {method.upper()}"
    if body is not None:
        schema = operation["requestBody"]["content"]["application/json"]["schema"]
        jsonschema.validate(json.loads(body), {**schema, "components": _openapi()["components"]})


@pytest.mark.parametrize(
    "example",
    [c for c in COMMANDS if _program(split(c.text))[0] in ("llama-server", "docker", "kubectl", "pip")],
    ids=str,
)
def test_other_programs_name_paths_that_exist(example):
    for word in _program(split(example.text)):
        if REPO_PATH.match(word):
            assert (ROOT / word).exists(), word


@pytest.mark.parametrize("example", yaml_blocks(), ids=str)
def test_yaml_blocks_resolve_as_config_files(example, tmp_path):
    path = tmp_path / "example.yaml"
    path.write_text(example.text, encoding="utf-8")
    resolve(str(path), environ={})


@pytest.mark.parametrize("example", environment_examples(), ids=str)
def test_environment_examples_resolve(example):
    name, _, value = example.text.partition("=")
    resolve(environ={name: value})
