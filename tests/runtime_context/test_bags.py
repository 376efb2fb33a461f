import pytest

from runtime_context import (
    BagReadOnly,
    NamespaceNotProjected,
    get_context,
    get_exec,
    get_http,
    get_schedule,
    publish,
    resolve,
)
from tests.publish_as import publish_as


@pytest.fixture
def schedule():
    publish_as(resolve(environ={}), "scheduler")
    return get_schedule()


def test_assignment_raises_and_says_how_to_write_instead(schedule):
    with pytest.raises(
        BagReadOnly, match=r"get_context\(\)\.override\('<why>', schedule__max_running_requests=\.\.\.\)"
    ):
        schedule.max_running_requests = 1
    with pytest.raises(BagReadOnly):
        del schedule.max_running_requests
    assert schedule.max_running_requests == 64


def test_leaves_are_real_instance_attributes_and_bookkeeping_is_authoritative(schedule):
    assert vars(schedule)["max_running_requests"] == 64
    assert schedule._leaves["max_running_requests"] == 64
    assert schedule.as_dict() == {
        "max_running_requests": 64,
        "max_queued_requests": 1024,
        "chunked_prefill_size": 512,
    }
    copy = schedule.as_dict()
    copy["max_running_requests"] = 1
    assert schedule.max_running_requests == 64


def test_scoped_override_applies_and_restores(schedule):
    with schedule.override(max_running_requests=4, chunked_prefill_size=64) as bag:
        assert bag is schedule
        assert (schedule.max_running_requests, schedule.chunked_prefill_size) == (4, 64)
        assert vars(schedule)["max_running_requests"] == 4
    assert (schedule.max_running_requests, schedule.chunked_prefill_size) == (64, 512)


def test_scoped_override_restores_after_an_exception(schedule):
    with pytest.raises(RuntimeError), schedule.override(max_running_requests=2):
        raise RuntimeError("boom")
    assert schedule.max_running_requests == 64


def test_scoped_override_is_all_or_nothing(schedule):
    with pytest.raises(
        ValueError, match="nothing changed: schedule.chunked_prefill_size: must be >= 16; got 1"
    ):
        with schedule.override(max_running_requests=4, chunked_prefill_size=1):
            pass
    with pytest.raises(ValueError, match="schedule.nope: unknown setting"):
        with schedule.override(nope=1):
            pass
    assert schedule.max_running_requests == 64


def test_unknown_attribute_is_an_attribute_error(schedule):
    with pytest.raises(AttributeError):
        schedule.max_runing_requests  # noqa: B018


def test_leaf_membership_and_iteration(schedule):
    assert "max_running_requests" in schedule
    assert "max_runing_requests" not in schedule
    assert 1 not in schedule
    assert list(schedule) == ["max_running_requests", "max_queued_requests", "chunked_prefill_size"]
    publish(resolve(environ={}), role="exec_reader", projection=("exec", "exec.moe"))
    assert "threads" in get_exec()
    assert "moe" not in get_exec()  # a sub-namespace, not a leaf


def shell_reads(shell):
    """Every way to look into a bag's own leaves: each must fail closed on a shell."""
    return {
        "as_dict": shell.as_dict,
        "leaf": lambda: shell.threads,
        "iteration": lambda: list(shell),
        "in": lambda: "threads" in shell,
        "scoped override": lambda: shell.override(threads=1).__enter__(),
        "permanent override": lambda: get_context().override("test", exec__threads=1),
    }


def test_shell_namespace_fails_closed_on_every_read(moe_recorder):
    # The role projects exec.moe but not exec: get_exec() is a shell that only carries moe.
    publish(resolve(environ={}), role="moe_only", projection=("model", "exec.moe"))
    shell = get_exec()
    assert shell.moe.as_dict()["recorder"] == "off"
    assert "recorder" in shell.moe
    for what, read in shell_reads(shell).items():
        with pytest.raises(NamespaceNotProjected) as caught:
            read()
        error = caught.value
        assert (error.role, error.namespace) == ("moe_only", "exec"), what
        assert error.caller.startswith(__file__ + ":"), what
        assert error.allowed == ["exec.moe", "model"], what
        assert "role 'moe_only' may not" in str(error), what
    assert get_context().overrides_log() == []


def test_a_leaf_withheld_from_the_record_fails_closed_like_a_shell():
    # In record mode a child's record carries every leaf but the secrets outside its projection.
    resolved = resolve(sets=["roles.enforcement=record", "http.api_key=sk-1"], environ={})
    publish(resolved.for_projection(("schedule",)), role="narrow", projection=("schedule",))
    http = get_http()
    assert "port" in http
    reads = {
        "as_dict": http.as_dict,
        "iteration": lambda: list(http),
        "in": lambda: "api_key" in http,
        "scoped override": lambda: http.override(api_key="sk-2"),
        "permanent override": lambda: get_context().override("test", http__api_key="sk-2"),
    }
    for what, read in reads.items():
        with pytest.raises(NamespaceNotProjected, match="role 'narrow' may not .* namespace 'http'"):
            read()
        assert get_context().overrides_log() == [], what
    with http.override(port=1):  # the leaves it carries stay usable
        assert http.port == 1
