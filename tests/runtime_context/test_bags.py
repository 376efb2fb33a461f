import pytest

from runtime_context import BagReadOnly, get_schedule, resolve
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
