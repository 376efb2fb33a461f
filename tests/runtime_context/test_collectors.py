import pytest

from roles.tokenizer.metrics import ServingMetrics
from runtime_context import resolve
from runtime_context.collectors import import_object, resolve_collector_class
from tests.collector_examples import CountingMetrics
from tests.publish_as import publish_as

COUNTING = "tests.collector_examples:CountingMetrics"


def test_a_registered_collector_is_used():
    publish_as(resolve(sets=[f"observability.stat_loggers=tokenizer={COUNTING}"], environ={}), "tokenizer")
    assert resolve_collector_class("tokenizer", ServingMetrics) is CountingMetrics


def test_an_unregistered_role_gets_its_default():
    publish_as(resolve(sets=[f"observability.stat_loggers=tokenizer={COUNTING}"], environ={}), "test")
    assert resolve_collector_class("encoder", ServingMetrics) is ServingMetrics
    publish_as(resolve(environ={}), "tokenizer")
    assert resolve_collector_class("tokenizer", ServingMetrics) is ServingMetrics


def test_nothing_published_means_the_default():
    assert resolve_collector_class("tokenizer", ServingMetrics) is ServingMetrics


def test_a_class_that_is_not_a_subclass_is_refused_where_it_is_resolved():
    bad = "tests.collector_examples:NotACollector"
    publish_as(resolve(sets=[f"observability.stat_loggers=tokenizer={bad}"], environ={}), "tokenizer")
    with pytest.raises(TypeError, match="is not a subclass of ServingMetrics"):
        resolve_collector_class("tokenizer", ServingMetrics)


def test_import_object_names_the_form():
    assert import_object(COUNTING) is CountingMetrics
    with pytest.raises(ValueError, match="package.module:ClassName"):
        import_object("tests.collector_examples.CountingMetrics")
