from serve_command import run_serve

from launcher.collector_check import stat_logger_problem
from tests.guards.project_files import ROOT

COUNTING = "tests.collector_examples:CountingMetrics"
WITH_TESTS = {"PYTHONPATH": str(ROOT)}  # so the serve command can import the example collectors


def test_good_entries_pass_and_each_kind_of_mistake_is_named():
    assert stat_logger_problem({"tokenizer": COUNTING}) is None
    assert "not a role with a metrics collector (those are: tokenizer)" in stat_logger_problem(
        {"encoder": COUNTING}
    )
    assert "cannot be imported" in stat_logger_problem({"tokenizer": "no_such_module:X"})
    assert "cannot be imported" in stat_logger_problem({"tokenizer": "tests.collector_examples:Missing"})
    assert "must be a class that subclasses roles.tokenizer.metrics.ServingMetrics" in stat_logger_problem(
        {"tokenizer": "tests.collector_examples:NotACollector"}
    )


def test_a_bad_collector_in_yaml_exits_2_with_file_line_and_key(tmp_path):
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("observability:\n  stat_loggers:\n    tokenizer: tests.collector_examples:NotACollector\n")
    result = run_serve("config", "validate", "--config", str(cfg), env=WITH_TESTS)
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"{cfg}:3:5: observability.stat_loggers: tokenizer:" in result.stderr
    good = tmp_path / "good.yaml"
    good.write_text(f"observability:\n  stat_loggers:\n    tokenizer: {COUNTING}\n")
    assert run_serve("config", "validate", "--config", str(good), env=WITH_TESTS).returncode == 0


def test_a_mapping_setting_takes_name_value_pairs_on_the_command_line():
    result = run_serve("config", "show", "--set", "observability.stat_loggers=tokenizer", "--format", "json")
    assert result.returncode == 2
    assert "must be name=value pairs separated by commas" in result.stderr
