"""Config files no operator should write still end in exit 2 with file:line and key, never a traceback,
never an invalid value accepted, and fast."""

import pytest

from runtime_context import ConfigError, resolve
from runtime_context.problems import MAX_LISTED
from runtime_context.yaml_source import MAX_CONFIG_BYTES, MAX_NESTING


def problems_of(tmp_path, text: str) -> str:
    path = tmp_path / "cfg.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        resolve(str(path), environ={})
    return caught.value.render()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("http:\n  port: " + "9" * 5000 + "\n", "cfg.yaml:2:9: http.port: invalid value"),
        ("http:\n  port: 2001-13-45\n", "cfg.yaml:2:9: http.port: invalid value"),
        ("http:\n  port: !!int abc\n", "cfg.yaml:2:9: http.port: invalid value"),
        ("http:\n  request_timeout_s: !!float abc\n", "cfg.yaml:2:22: http.request_timeout_s: invalid value"),
        ("http:\n  request_timeout_s: .nan\n", "http.request_timeout_s: must be a finite number; got nan"),
        ("http:\n  request_timeout_s: .inf\n", "http.request_timeout_s: must be a finite number; got inf"),
        ("http: !!python/object:os.system {}\n", "cfg.yaml:1:7: http: unsupported YAML tag"),
        ("model:\n  path: !custom x\n", "cfg.yaml:2:9: model.path: unsupported YAML tag '!custom'"),
        ("a: " + "[" * 1000 + "]" * 1000 + "\n", f"nested more than {MAX_NESTING} levels deep"),
        ("a: " + "[" * 40 + "]" * 40 + "\n", f"nested more than {MAX_NESTING} levels deep"),
    ],
)
def test_each_is_a_problem_with_its_place(tmp_path, text, expected):
    assert expected in problems_of(tmp_path, text)


def test_an_alias_bomb_is_refused_without_expanding_it(tmp_path):
    lines = ['a: &a ["x","x","x","x","x","x","x","x","x"]']
    for name, previous in zip("bcdefgh", "abcdefg", strict=True):
        lines.append(f"{name}: &{name} [{', '.join(['*' + previous] * 9)}]")
    assert "values once aliases are expanded" in problems_of(tmp_path, "\n".join(lines) + "\n")


def test_an_oversized_file_and_a_flood_of_unknown_keys_are_cut_short(tmp_path):
    assert f"larger than {MAX_CONFIG_BYTES} bytes" in problems_of(tmp_path, "#" * (MAX_CONFIG_BYTES + 10))
    flood = "".join(f"key{i}: 1\n" for i in range(5000))
    rendered = problems_of(tmp_path, flood)
    assert rendered.startswith("configuration has 5000 problems:")
    assert len(rendered.splitlines()) == MAX_LISTED + 2 and f"and {5000 - MAX_LISTED} more" in rendered


def test_a_nan_from_the_environment_is_refused_too():
    with pytest.raises(ConfigError) as caught:
        resolve(environ={"ROLESERVE_HTTP__REQUEST_TIMEOUT_S": "nan"})
    assert "must be a finite number" in caught.value.render()
