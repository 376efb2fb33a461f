import os
import time

import pytest

import runtime_context as rc
from runtime_context import get_context, install, reset_context, resolve
from tests.publish_as import publish_as


def test_publish_records_role_pid_time_and_fingerprint():
    resolved = resolve(environ={})
    before = time.time()
    report = publish_as(resolved, "scheduler")
    context = get_context()
    assert context.publish_role == "scheduler"
    assert context.published_pid == os.getpid()
    assert before <= context.published_at <= time.time()
    assert context.fingerprint == resolved.fingerprint == report.fingerprint
    assert report.dropped_overrides == ()


def test_publish_unknown_role_raises_and_changes_nothing():
    with pytest.raises(ValueError, match="unknown role 'frontend'; known roles: launcher, tokenizer"):
        publish_as(resolve(environ={}), "frontend")
    assert not get_context().is_published


def test_direct_install_without_role_clears_the_role():
    resolved = resolve(environ={})
    publish_as(resolved, "tokenizer")
    install(resolved)
    assert get_context().publish_role is None
    assert rc.get_exec().threads >= 1  # unprojected: every namespace visible


def test_republish_is_last_publish_wins_and_reports_dropped_overrides(caplog):
    first = resolve(environ={})
    second = resolve(sets=["schedule.max_running_requests=7"], environ={})
    publish_as(first, "scheduler")
    get_context().override("tuning", schedule__max_running_requests=3)
    with caplog.at_level("WARNING", logger="roleserve.config"):
        report = publish_as(second, "scheduler")
    assert [e.key for e in report.dropped_overrides] == ["schedule.max_running_requests"]
    assert "drops 1 override(s): schedule.max_running_requests (tuning)" in caplog.text
    assert rc.get_schedule().max_running_requests == 7
    assert get_context().overrides_log() == []


def test_reset_context_clears_everything():
    publish_as(resolve(environ={}), "scheduler")
    reset_context()
    context = get_context()
    assert (context.publish_role, context.fingerprint, context.bags) == (None, None, {})
    with pytest.raises(
        rc.ConfigNotPublished, match=r"must call runtime_context.publish\(resolved, role=...\)"
    ):
        rc.get_schedule()


ACCESSORS = {
    "model": rc.get_model,
    "http": rc.get_http,
    "tokenizer": rc.get_tokenizer,
    "schedule": rc.get_schedule,
    "memory": rc.get_memory,
    "parallel": rc.get_parallel,
    "exec": rc.get_exec,
    "encoder": rc.get_encoder,
    "weight_cache": rc.get_weight_cache,
    "expert_backup": rc.get_expert_backup,
    "observability": rc.get_observability,
    "launcher": rc.get_launcher,
}


@pytest.mark.parametrize("namespace", list(ACCESSORS))
def test_every_accessor_answers_after_publish_and_raises_clearly_before(namespace):
    accessor = ACCESSORS[namespace]
    with pytest.raises(rc.ConfigNotPublished):
        accessor()
    resolved = resolve(environ={})
    publish_as(resolved, "test")
    bag = accessor()
    assert bag.namespace == namespace
    for key, value in bag.as_dict().items():
        assert value == resolved.raw_value(f"{namespace}.{key}")


def test_exec_moe_is_a_sub_bag(moe_recorder):
    publish_as(resolve(sets=["exec.moe.recorder=stat"], environ={}), "test")
    assert rc.get_exec().moe.recorder == "stat"
    assert rc.get_exec().moe.namespace == "exec.moe"
