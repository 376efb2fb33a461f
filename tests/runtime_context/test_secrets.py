"""No secret value reaches a repr, an error message, a log line or an override-log entry."""

import pytest

import runtime_context as rc
from runtime_context import ConfigError, get_context, resolve
from runtime_context.setting import Setting, SettingValueError
from runtime_context.settings import SETTINGS
from runtime_context.yaml_source import read_yaml_config
from tests.publish_as import publish_as

SECRET = "sk-live-5f3e9a"


def write(tmp_path, text):
    path = tmp_path / "cfg.yaml"
    path.write_text(text)
    return str(path)


def config_error(**kwargs) -> str:
    with pytest.raises(ConfigError) as caught:
        resolve(environ=kwargs.pop("environ", {}), **kwargs)
    return str(caught.value)


def test_yaml_secret_of_the_wrong_type_says_the_type_not_the_value(tmp_path):
    message = config_error(config_path=write(tmp_path, "http:\n  api_key: 98765432101\n"))
    assert "http.api_key: must be a string; got int (value not shown: secret)" in message
    assert "98765432101" not in message
    message = config_error(config_path=write(tmp_path, f"http:\n  api_key: [{SECRET}]\n"))
    assert "got list (value not shown: secret)" in message
    assert SECRET not in message


def test_yaml_value_that_cannot_be_built_is_reported_without_its_source_line(tmp_path):
    message = config_error(config_path=write(tmp_path, f"http:\n  api_key: !custom {SECRET}\n"))
    assert ":2:12: http.api_key: unsupported YAML tag '!custom': a config holds plain values" in message
    assert SECRET not in message
    message = config_error(config_path=write(tmp_path, "http:\n  api_key: 2001-13-45\n"))
    assert "http.api_key: invalid value: month must be in 1..12" in message


def test_yaml_assignment_repr_masks_a_secret(tmp_path):
    assignments, problems = read_yaml_config(write(tmp_path, f"http:\n  api_key: {SECRET}\n"))
    assert problems == [] and assignments[0].value == SECRET
    assert SECRET not in repr(assignments)


def test_cli_set_of_a_secret_never_echoes_the_value():
    message = config_error(sets=[f"http.api_keyy={SECRET}"])
    assert "cli --set http.api_keyy: http.api_keyy: unknown setting (did you mean http.api_key?)" in message
    assert SECRET not in message
    message = config_error(sets=[f"http.api_key {SECRET}"])  # '=' forgotten
    assert "cli --set http.api_key: http.api_key: expected --set namespace.key=value" in message
    assert SECRET not in message
    message = config_error(sets=["http.port=1", SECRET])
    assert "cli --set #2: expected --set namespace.key=value" in message
    assert SECRET not in message
    message = config_error(environ={"ROLESERVE_HTTP__API_KEYY": SECRET})
    assert "did you mean ROLESERVE_HTTP__API_KEY?" in message
    assert SECRET not in message


def test_cli_set_of_a_non_secret_still_shows_what_was_given():
    message = config_error(sets=["memory.page_size=x"])
    assert "cli --set memory.page_size: memory.page_size: must be an integer; got 'x'" in message


def test_a_secret_setting_checks_and_parses_without_echoing():
    pin = Setting("vault", "pin", int, None, "A secret number.", minimum=1000, optional=True, secret=True)
    for attempt in (lambda: pin.parse("12ab34"), lambda: pin.check(12), lambda: pin.check("123456")):
        with pytest.raises(SettingValueError) as caught:
            attempt()
        assert "value not shown: secret" in str(caught.value)
        assert not any(text in str(caught.value) for text in ("12ab34", "12", "123456"))


@pytest.fixture
def with_secret():
    publish_as(resolve(sets=[f"http.api_key={SECRET}"], environ={}), "test")
    return get_context()


def test_override_of_a_secret_is_logged_masked(with_secret, caplog):
    new = SECRET + "-rotated"
    with caplog.at_level("DEBUG", logger="roleserve.config"):
        with_secret.override("rotate", http__api_key=new)
        report = publish_as(resolve(environ={}), "test")  # drops the override, logging it
    assert rc.get_http().api_key is None
    (entry,) = report.dropped_overrides
    assert (entry.key, entry.old, entry.new) == ("http.api_key", "***", "***")
    for text in (repr(entry), str(entry.shown()), repr(report), caplog.text):
        assert SECRET not in text


def test_reprs_and_override_errors_never_show_a_secret(with_secret):
    http = rc.get_http()
    assert http.api_key == SECRET
    snapshot = with_secret.snapshot()
    with_secret.override("rotate", http__api_key=SECRET + "-2")
    shown = [repr(http), repr(with_secret.resolved), repr(snapshot), repr(with_secret.overrides_log())]
    assert not any(SECRET in text for text in shown), shown
    with pytest.raises(ValueError) as caught:
        with_secret.override("bad", http__api_key=4815162342)
    assert "got int (value not shown: secret)" in str(caught.value)
    assert "4815162342" not in str(caught.value)
    with pytest.raises(ValueError) as caught:
        http.override(api_key=4815162342)
    assert "4815162342" not in str(caught.value)
    assert SETTINGS["http.api_key"].secret
