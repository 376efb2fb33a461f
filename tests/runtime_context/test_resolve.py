import pytest

from runtime_context import ConfigError, resolve
from runtime_context.derivation import available_cpus


def write(tmp_path, text, name="cfg.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_defaults_file_env_cli_precedence_with_provenance(tmp_path):
    cfg = write(tmp_path, "http:\n  port: 8000\n  host: 0.0.0.0\nschedule:\n  max_running_requests: 8\n")
    resolved = resolve(
        cfg,
        sets=["schedule.max_running_requests=16"],
        flags={"--port": "9000"},
        environ={"ROLESERVE_HTTP__HOST": "127.0.0.2", "ROLESERVE_MEMORY__PAGE_SIZE": "32"},
    )
    assert resolved.raw_value("http.port") == 9000
    assert str(resolved.source("http.port")) == "cli --port"
    assert resolved.raw_value("http.host") == "127.0.0.2"
    assert str(resolved.source("http.host")) == "env ROLESERVE_HTTP__HOST"
    assert resolved.raw_value("schedule.max_running_requests") == 16
    assert str(resolved.source("schedule.max_running_requests")) == "cli --set schedule.max_running_requests"
    assert str(resolved.source("memory.page_size")) == "env ROLESERVE_MEMORY__PAGE_SIZE"
    assert str(resolved.source("model.path")) == "default"


def test_file_source_has_line_and_column(tmp_path, moe_recorder):
    cfg = write(tmp_path, "# comment\nexec:\n  weight_dtype: int8\n  moe:\n    recorder: stat\n")
    resolved = resolve(cfg, environ={})
    assert str(resolved.source("exec.weight_dtype")) == f"file {cfg}:3:17"
    assert str(resolved.source("exec.moe.recorder")) == f"file {cfg}:5:15"
    assert resolved.raw_value("exec.moe.recorder") == "stat"


def test_yaml_false_null_zero_and_empty_list_keep_their_meaning(tmp_path):
    cfg = write(
        tmp_path,
        "memory:\n  prefix_cache: false\n  kv_cache_tokens: 0\nhttp:\n  api_key: null\n  cors_origins: []\n",
    )
    resolved = resolve(cfg, environ={})
    assert resolved.raw_value("memory.prefix_cache") is False
    assert resolved.raw_value("http.cors_origins") == ()
    assert resolved.raw_value("http.api_key") is None
    assert str(resolved.source("http.api_key")).startswith("file ")


def test_empty_file_is_an_empty_config(tmp_path):
    assert resolve(write(tmp_path, ""), environ={}) == resolve(environ={})


def test_derived_leaf_records_rule_and_inputs():
    resolved = resolve(environ={})
    assert resolved.raw_value("exec.threads") >= 1
    assert (
        str(resolved.source("exec.threads"))
        == "derived available_cpus from exec.threads=0, cpu affinity, parallel.dp_size, parallel.ep_size"
    )
    explicit = resolve(sets=["exec.threads=3"], environ={})
    assert explicit.raw_value("exec.threads") == 3


def test_derived_threads_share_the_cores_among_scheduler_replicas():
    cpus = available_cpus()
    for sets in (["parallel.dp_size=2"], ["parallel.ep_size=2"]):
        assert resolve(sets=sets, environ={}).raw_value("exec.threads") == max(1, cpus // 2)


def test_all_problems_are_collected_together(tmp_path):
    cfg = write(tmp_path, "http:\n  prot: 1\nschedule:\n  max_running_requests: 0\n")
    with pytest.raises(ConfigError) as caught:
        resolve(cfg, sets=["memory.page_size=x"], environ={"ROLESERVE_HTTP__PORTT": "1"})
    rendered = str(caught.value)
    assert len(caught.value.problems) == 4, rendered
    assert f"{cfg}:2:3: http.prot: unknown key (did you mean port?)" in rendered
    assert f"{cfg}:4:25: schedule.max_running_requests: must be >= 1; got 0" in rendered
    assert "cli --set memory.page_size: memory.page_size: must be an integer; got 'x'" in rendered
    assert "env ROLESERVE_HTTP__PORTT: unknown setting (did you mean ROLESERVE_HTTP__PORT?)" in rendered


def test_contradicting_fields_are_reported_with_both_sources(tmp_path):
    cfg = write(tmp_path, "weight_cache:\n  enabled: false\n  persist: true\n")
    with pytest.raises(ConfigError) as caught:
        resolve(cfg, environ={})
    message = str(caught.value)
    assert f"{cfg}:3:12: weight_cache.persist: true needs weight_cache.enabled: true" in message
    assert f"weight_cache.enabled from file {cfg}:2:12" in message


def test_cli_set_later_wins_and_needs_equals():
    assert resolve(sets=["http.port=1", "http.port=2"], environ={}).raw_value("http.port") == 2
    with pytest.raises(ConfigError, match="expected --set namespace.key=value"):
        resolve(sets=["http.port"], environ={})
