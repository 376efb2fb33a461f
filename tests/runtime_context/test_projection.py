import pytest

import runtime_context as rc
from runtime_context import NamespaceNotProjected, get_context, publish, resolve
from runtime_context.settings import NAMESPACES
from tests.publish_as import projection_of, publish_as

PROJECTIONS = {
    "everything": NAMESPACES,
    "http only": ("http",),
    "a sub-namespace without its parent": ("model", "exec.moe"),
    "nothing": (),
}


@pytest.mark.parametrize("projection", PROJECTIONS.values(), ids=PROJECTIONS.keys())
def test_enforce_tree_holds_exactly_the_projection(projection):
    publish(resolve(environ={}), role="some_role", projection=projection)
    context = get_context()
    for namespace in NAMESPACES:
        if namespace in projection:
            assert context.is_config_namespace_published(namespace)
            assert context.bag(namespace).namespace == namespace
        else:
            with pytest.raises(NamespaceNotProjected):
                context.is_config_namespace_published(namespace)


def test_publish_refuses_an_unknown_namespace_or_a_bare_string():
    with pytest.raises(ValueError, match="role 'r' declares unknown namespaces \\['sched'\\]"):
        publish(resolve(environ={}), role="r", projection=("model", "sched"))
    with pytest.raises(TypeError, match="not the string 'model'"):
        publish(resolve(environ={}), role="r", projection="model")
    assert not get_context().is_published


def test_publish_needs_a_projection():
    with pytest.raises(TypeError):
        publish(resolve(environ={}), role="scheduler")  # type: ignore[call-arg]


def test_error_names_role_namespace_caller_and_allowed_set():
    publish_as(resolve(environ={}), "tokenizer")
    with pytest.raises(NamespaceNotProjected) as caught:
        rc.get_memory()
    error = caught.value
    assert (error.role, error.namespace) == ("tokenizer", "memory")
    assert error.caller.startswith(__file__ + ":")
    assert error.allowed == sorted(projection_of("tokenizer"))
    assert "role 'tokenizer' may not read namespace 'memory'" in str(error)
    assert f"its projection allows: {', '.join(sorted(projection_of('tokenizer')))}" in str(error)


def test_shell_namespace_blocks_its_own_leaves_but_carries_sub_namespaces():
    publish(resolve(environ={}), role="moe_only", projection=("model", "exec.moe"))
    assert rc.get_exec().moe.namespace == "exec.moe"
    with pytest.raises(NamespaceNotProjected, match="may not read namespace 'exec'") as caught:
        rc.get_exec().threads  # noqa: B018
    assert caught.value.caller.startswith(__file__)
    with pytest.raises(NamespaceNotProjected, match="may not override namespace 'exec'"):
        with rc.get_exec().override(threads=1):
            pass


def test_sub_namespace_outside_projection_is_blocked():
    publish_as(resolve(environ={}), "encoder")
    assert rc.get_exec().threads >= 1
    with pytest.raises(NamespaceNotProjected, match="may not read namespace 'exec.moe'"):
        rc.get_exec().moe  # noqa: B018


def test_override_outside_projection_raises_and_changes_nothing():
    publish_as(resolve(environ={}), "tokenizer")
    with pytest.raises(NamespaceNotProjected, match="may not read namespace 'memory'"):
        get_context().override("test", http__port=1, memory__page_size=8)
    assert rc.get_http().port == 30000
    assert get_context().overrides_log() == []


def test_is_published_for_unknown_namespace_and_before_publish():
    with pytest.raises(ValueError, match="unknown namespace 'sched'"):
        get_context().is_config_namespace_published("sched")
    assert get_context().is_config_namespace_published("model") is False


def test_record_mode_allows_everything_and_records_reads():
    publish_as(resolve(sets=["roles.enforcement=record"], environ={}), "tokenizer")
    assert get_context().is_config_namespace_published("memory")
    assert rc.get_memory().page_size == 16
    rc.get_memory().page_size  # noqa: B018
    rc.get_http().port  # noqa: B018
    reads = get_context().recorded_reads()
    namespaces = {(role, ns, leaf) for role, ns, leaf, _, _ in reads}
    assert namespaces == {("tokenizer", "memory", "page_size"), ("tokenizer", "http", "port")}
    sites = {site for _, _, _, site, _ in reads}
    assert all(site.startswith(__file__ + ":") for site in sites)
    assert sum(count for *_, count in reads if _[1] == "memory") == 2


def test_off_mode_allows_everything_without_recording():
    publish_as(resolve(sets=["roles.enforcement=off"], environ={}), "tokenizer")
    assert rc.get_memory().page_size == 16
    assert get_context().recorded_reads() == []


def test_current_value_of_a_shell_leaf_fails_closed():
    publish(resolve(environ={}), role="moe_only", projection=("model", "exec.moe"))
    with pytest.raises(NamespaceNotProjected, match="may not read namespace 'exec'"):
        get_context().current_value("exec.threads")
    assert get_context().current_value("model.path") == "smollm2"
