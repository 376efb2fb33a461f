import pytest

from launcher.role_list import LAUNCHER, ROLES, RoleList
from roles.role_description import RoleDescription


def test_the_launcher_lists_each_runnable_role_once_in_order():
    assert ROLES.names() == [
        "launcher",
        "tokenizer",
        "scheduler",
        "dp_controller",
        "encoder",
        "weight_cache_daemon",
        "expert_backup",
    ]
    assert ROLES.named("launcher") is LAUNCHER
    for role in ROLES:
        assert role.summary
        assert (role.entry is None) == (role.name == "launcher")


def test_every_role_entry_names_a_real_function():
    import importlib

    for role in ROLES:
        if role.entry is not None:
            module, _, function = role.entry.partition(":")
            assert callable(getattr(importlib.import_module(module), function))


def test_a_role_described_twice_is_refused():
    twin = RoleDescription("tokenizer", ("http",), "x:y", "another front")
    with pytest.raises(ValueError, match="role 'tokenizer' is described twice"):
        RoleList(*ROLES, twin)


def test_unknown_role_and_unknown_namespace_are_named():
    with pytest.raises(ValueError, match="unknown role 'frontend'; known roles: launcher, tokenizer"):
        ROLES.named("frontend")
    with pytest.raises(ValueError, match="role 'x' declares unknown namespaces \\['sched'\\]"):
        RoleDescription("x", ("sched",), None, "")
