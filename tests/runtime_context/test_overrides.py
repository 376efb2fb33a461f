import pytest

import runtime_context as rc
from runtime_context import get_context, resolve
from tests.publish_as import publish_as


@pytest.fixture
def context():
    publish_as(resolve(environ={}), "scheduler")
    return get_context()


def test_override_is_permanent_logged_with_source_and_caller(moe_recorder):
    publish_as(resolve(environ={}), "test")
    context = get_context()
    context.override("autotune", schedule__max_running_requests=8, **{"exec.moe.recorder": "stat"})
    assert rc.get_schedule().max_running_requests == 8
    assert rc.get_exec().moe.recorder == "stat"
    log = context.overrides_log()
    assert [(e.source, e.key, e.old, e.new) for e in log] == [
        ("autotune", "schedule.max_running_requests", 64, 8),
        ("autotune", "exec.moe.recorder", "off", "stat"),
    ]
    assert log[0].caller.startswith(__file__ + ":")
    source = str(context.current_source("schedule.max_running_requests"))
    assert source.startswith("override autotune at " + __file__)


def test_override_is_all_or_nothing(context):
    with pytest.raises(ValueError, match="nothing changed"):
        context.override("bad", schedule__max_running_requests=8, memory__page_size=0)
    assert rc.get_schedule().max_running_requests == 64
    with pytest.raises(ValueError, match="schedule.max_runs: unknown setting"):
        context.override("bad", schedule__max_runs=1)
    assert context.overrides_log() == []


def test_overrides_log_returns_copies(context):
    context.override("a", memory__page_size=32)
    log = context.overrides_log()
    log.clear()
    assert len(context.overrides_log()) == 1
    assert context.overrides_log()[0] is not context.overrides_log()[0]


def test_snapshot_restore_covers_record_bags_log_and_role(context):
    saved = context.snapshot()
    context.override("a", memory__page_size=32)
    publish_as(resolve(sets=["http.port=1"], environ={}), "tokenizer")
    context.override("b", http__port=2)
    context.restore(saved)
    assert context.publish_role == "scheduler"
    assert rc.get_memory().page_size == 16
    assert context.overrides_log() == []


def test_scoped_context_nests(context):
    with context.scoped():
        context.override("outer", memory__page_size=32)
        with context.scoped():
            context.override("inner", memory__page_size=64)
            assert rc.get_memory().page_size == 64
        assert rc.get_memory().page_size == 32
        assert [e.source for e in context.overrides_log()] == ["outer"]
    assert rc.get_memory().page_size == 16
    assert context.overrides_log() == []


def test_snapshot_restores_recorded_reads():
    publish_as(resolve(sets=["roles.enforcement=record"], environ={}), "test")
    context = get_context()
    rc.get_http().port  # noqa: B018
    with context.scoped():
        rc.get_memory().page_size  # noqa: B018
        assert len(context.recorded_reads()) == 2
    assert [r[1] for r in context.recorded_reads()] == ["http"]


def test_permanent_override_inside_a_scope_outlives_the_scope(context):
    schedule = rc.get_schedule()
    with schedule.override(max_running_requests=4, chunked_prefill_size=64):
        context.override("autotune", schedule__max_running_requests=8)
        assert schedule.max_running_requests == 8
    assert schedule.max_running_requests == 8  # the permanent override wins
    assert schedule.chunked_prefill_size == 512  # what only the scope set is restored
    assert [(e.key, e.old, e.new) for e in context.overrides_log()] == [
        ("schedule.max_running_requests", 4, 8)
    ]
    assert str(context.current_source("schedule.max_running_requests")).startswith("override autotune")
    assert context.current_value("schedule.max_running_requests") == 8


def test_nested_scopes_of_one_leaf_restore_in_order_around_a_permanent_override(context):
    memory = rc.get_memory()
    with memory.override(page_size=32):
        with memory.override(page_size=64):
            pass
        assert memory.page_size == 32
        with memory.override(page_size=64):
            context.override("tune", memory__page_size=128)
        assert memory.page_size == 128
    assert memory.page_size == 128
    assert [e.new for e in context.overrides_log()] == [128]


def test_context_restore_inside_a_scope_keeps_the_scope_restoring(context):
    memory = rc.get_memory()
    with memory.override(page_size=32):
        with context.scoped():
            context.override("inner", memory__page_size=64)
        assert memory.page_size == 32
    assert memory.page_size == 16
    assert context.overrides_log() == []
