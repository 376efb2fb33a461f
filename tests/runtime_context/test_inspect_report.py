import json

from runtime_context import get_context, resolve
from runtime_context.inspect_report import live_entry, offline_entry, render_json, render_table
from tests.publish_as import projection_of, publish_as


def test_offline_entry_lists_only_the_projection_with_sources():
    resolved = resolve(sets=["http.api_key=s3cret"], environ={})
    entry = offline_entry(resolved, "dp_controller", projection_of("dp_controller"))
    assert entry["projection"] == ["parallel", "observability"]
    assert {leaf["key"].split(".")[0] for leaf in entry["leaves"]} == {"parallel", "observability"}
    tokenizer = offline_entry(resolved, "tokenizer", projection_of("tokenizer"))
    key = next(leaf for leaf in tokenizer["leaves"] if leaf["key"] == "http.api_key")
    assert key == {"key": "http.api_key", "value": "***", "source": "cli --set http.api_key"}
    assert "s3cret" not in render_json([tokenizer]) + render_table([tokenizer])


def test_live_entry_matches_offline_for_the_same_config_and_adds_overrides():
    resolved = resolve(environ={})
    publish_as(resolved, "scheduler")
    live = live_entry(get_context(), instance=0)
    offline = offline_entry(resolved, "scheduler", projection_of("scheduler"))
    assert live["leaves"] == offline["leaves"]
    assert live["fingerprint"] == offline["fingerprint"]
    get_context().override("tune", memory__page_size=32)
    live = live_entry(get_context(), instance=0)
    page = next(leaf for leaf in live["leaves"] if leaf["key"] == "memory.page_size")
    assert page["value"] == 32 and page["source"].startswith("override tune at ")
    assert live["overrides"][0]["key"] == "memory.page_size"
    json.loads(render_json([live]))
    assert "scheduler[0]" in render_table([live])
