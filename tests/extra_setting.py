"""Declare one more setting for the length of a test, e.g. a leaf in a sub-namespace (exec.moe), whose real
settings arrive with the feature that reads them. Everything built from the declarations sees it."""

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from runtime_context import settings
from runtime_context.setting import Setting


@contextmanager
def extra_setting(namespace: str, name: str, type_: type, default, doc: str, **bounds) -> Iterator[Setting]:
    setting = Setting(namespace=namespace, name=name, type=type_, default=default, doc=doc, **bounds)
    assert setting.key not in settings.SETTINGS, f"{setting.key} is already declared"
    settings._DECLARED.append(setting)
    settings._BY_KEY[setting.key] = setting
    try:
        yield setting
    finally:
        settings._DECLARED.remove(setting)
        del settings._BY_KEY[setting.key]


@pytest.fixture
def moe_recorder() -> Iterator[Setting]:
    """exec.moe.recorder as the MoE issue will declare it: a leaf below a sub-namespace."""
    with extra_setting(
        "exec.moe", "recorder", str, "off", "MoE routing recorder.", choices=("off", "stat")
    ) as s:
        yield s
