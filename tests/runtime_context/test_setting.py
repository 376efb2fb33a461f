import pytest

from runtime_context.setting import Setting, SettingValueError
from runtime_context.settings import SETTINGS


def test_int_setting_rejects_bool_and_bounds():
    port = SETTINGS["http.port"]
    assert port.check(8080) == 8080
    with pytest.raises(SettingValueError, match="must be an integer; got true"):
        port.check(True)
    with pytest.raises(SettingValueError, match="must be <= 65535; got 70000"):
        port.check(70000)
    with pytest.raises(SettingValueError, match="must be >= 1; got 0"):
        port.check(0)


def test_parse_from_text_keeps_meaning():
    assert SETTINGS["memory.prefix_cache"].parse("false") is False
    assert SETTINGS["memory.prefix_cache"].parse("YES") is True
    assert SETTINGS["http.api_key"].parse("null") is None
    assert SETTINGS["http.cors_origins"].parse("") == ()
    assert SETTINGS["http.cors_origins"].parse("a, b") == ("a", "b")
    assert SETTINGS["launcher.startup_timeout_s"].parse("2.5") == 2.5
    with pytest.raises(SettingValueError, match="must be true or false"):
        SETTINGS["memory.prefix_cache"].parse("maybe")
    with pytest.raises(SettingValueError, match="must be an integer"):
        SETTINGS["http.port"].parse("80x")


def test_choices_and_null():
    mode = SETTINGS["roles.enforcement"]
    with pytest.raises(SettingValueError, match="must be one of enforce, record, off; got 'strict'"):
        mode.check("strict")
    with pytest.raises(SettingValueError, match="got null"):
        mode.check(None)


def test_env_name_and_type_name():
    setting = Setting("exec.moe", "recorder", str, "off", "doc")
    assert setting.env_name == "ROLESERVE_EXEC__MOE__RECORDER"
    assert SETTINGS["http.api_key"].type_name == "str | null"
    assert SETTINGS["http.cors_origins"].type_name == "list[str]"
