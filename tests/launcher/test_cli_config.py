import json

import pytest
from serve_command import run_serve

from roles.scheduler.kernels.isa import missing_flags
from runtime_context.settings import SETTINGS


def write(tmp_path, text):
    path = tmp_path / "cfg.yaml"
    path.write_text(text)
    return str(path)


MALFORMED = {
    "unknown key with did-you-mean": (
        "http:\n  prot: 8000\n",
        ["{cfg}:2:3: http.prot: unknown key (did you mean port?)"],
    ),
    "unknown namespace": (
        "shedule:\n  max_running_requests: 4\n",
        ["{cfg}:1:1: shedule: unknown namespace (did you mean schedule?)"],
    ),
    "leaf in the wrong namespace": (
        "http:\n  page_size: 8\n",
        ["{cfg}:2:3: http.page_size: unknown key (did you mean memory.page_size?)"],
    ),
    "wrong type": ("http:\n  port: eighty\n", ["{cfg}:2:9: http.port: must be an integer; got 'eighty'"]),
    "bool is not an int": (
        "schedule:\n  max_running_requests: true\n",
        ["{cfg}:2:25: schedule.max_running_requests: must be an integer; got true"],
    ),
    "out of range": ("memory:\n  page_size: 0\n", ["{cfg}:2:14: memory.page_size: must be >= 1; got 0"]),
    "bad choice": (
        "roles:\n  enforcement: strict\n",
        ["{cfg}:2:16: roles.enforcement: must be one of enforce, record, off; got 'strict'"],
    ),
    "null for a required leaf": ("model:\n  path: null\n", ["{cfg}:2:9: model.path: must be str; got null"]),
    "non-mapping top level": (
        "- http\n- port\n",
        ["{cfg}:1:1: the top level of a config file must be a mapping"],
    ),
    "non-mapping namespace": ("http: 8000\n", ["{cfg}:1:7: http: namespace http must be a mapping"]),
    "duplicate key": (
        "http:\n  port: 1\n  port: 2\n",
        ["{cfg}:3:3: http.port: duplicate key (first given on line 2)"],
    ),
    "invalid YAML": ("http:\n  port: [1\n", ["{cfg}:3:1: invalid YAML"]),
    "list of wrong items": (
        "http:\n  cors_origins: [1, 2]\n",
        ["{cfg}:2:17: http.cors_origins: must be a list of strings"],
    ),
    "contradiction": (
        "weight_cache:\n  enabled: false\n  persist: true\n",
        ["{cfg}:3:12: weight_cache.persist: true needs weight_cache.enabled: true"],
    ),
    "several problems at once": (
        "http:\n  port: 0\nmemory:\n  page_sise: 4\n",
        [
            "{cfg}:2:9: http.port: must be >= 1; got 0",
            "{cfg}:4:3: memory.page_sise: unknown key (did you mean page_size?)",
            "configuration has 2 problems",
        ],
    ),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_config_exits_2_naming_file_line_and_key(tmp_path, case):
    text, expected = MALFORMED[case]
    cfg = write(tmp_path, text)
    result = run_serve("config", "validate", "--config", cfg)
    assert result.returncode == 2, result.stdout + result.stderr
    for line in expected:
        assert line.format(cfg=cfg) in result.stderr
    assert result.stdout == ""


def test_missing_and_unreadable_config_files(tmp_path):
    missing = run_serve("config", "validate", f"--config={tmp_path}/nope.yaml")
    assert missing.returncode == 2
    assert f"{tmp_path}/nope.yaml: config file not found" in missing.stderr
    binary = tmp_path / "bin.yaml"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    unreadable = run_serve("config", "validate", "--config", str(binary))
    assert unreadable.returncode == 2 and "cannot read config file" in unreadable.stderr


def test_serve_itself_refuses_a_bad_config_before_starting_anything(tmp_path):
    result = run_serve("--config", write(tmp_path, "http:\n  port: -1\n"))
    assert result.returncode == 2
    assert "http.port: must be >= 1; got -1" in result.stderr


def test_validate_ok_and_both_config_spellings(tmp_path):
    cfg = write(tmp_path, "http:\n  port: 8001\n")
    for args in (["--config", cfg], [f"--config={cfg}"]):
        result = run_serve("config", "validate", *args)
        assert result.returncode == 0 and "configuration is valid" in result.stdout


def test_config_show_json_has_every_leaf_with_source(tmp_path):
    cfg = write(tmp_path, "http:\n  port: 8001\n  api_key: topsecret\n")
    result = run_serve(
        "config",
        "show",
        "--config",
        cfg,
        "--set",
        "schedule.max_running_requests=9",
        "--dp-size",
        "2",
        "--log-level",
        "debug",
        "--format",
        "json",
        env={"ROLESERVE_MEMORY__PAGE_SIZE": "32"},
    )
    assert result.returncode == 0, result.stderr
    assert "topsecret" not in result.stdout
    shown = {leaf["key"]: leaf for leaf in json.loads(result.stdout)["leaves"]}
    assert set(shown) == set(SETTINGS)
    assert shown["http.port"]["source"] == f"file {cfg}:2:9"
    assert shown["http.api_key"] == {"key": "http.api_key", "value": "***", "source": f"file {cfg}:3:12"}
    assert shown["schedule.max_running_requests"]["source"] == "cli --set schedule.max_running_requests"
    assert shown["parallel.dp_size"] == {"key": "parallel.dp_size", "value": 2, "source": "cli --dp-size"}
    assert shown["observability.log_level"]["source"] == "cli --log-level"
    assert shown["memory.page_size"]["source"] == "env ROLESERVE_MEMORY__PAGE_SIZE"
    assert shown["exec.threads"]["source"].startswith("derived available_cpus")


def test_config_show_table_masks_secrets(tmp_path):
    result = run_serve("config", "show", "--set", "http.api_key=topsecret")
    assert result.returncode == 0
    assert "topsecret" not in result.stdout
    assert "http.api_key" in result.stdout and "***" in result.stdout


def test_bad_env_and_cli_values_exit_2():
    result = run_serve("config", "validate", "--port", "x", env={"ROLESERVE_HTTP__HSOT": "a"})
    assert result.returncode == 2
    assert "cli --port: http.port: must be an integer; got 'x'" in result.stderr
    assert "env ROLESERVE_HTTP__HSOT: unknown setting (did you mean ROLESERVE_HTTP__HOST?)" in result.stderr


@pytest.mark.parametrize("args", [[], ["config", "show"], ["config", "validate"], ["roles", "inspect"]])
def test_help_lists_every_setting(args):
    result = run_serve(*args, "--help")
    assert result.returncode == 0
    for key, setting in SETTINGS.items():
        assert key in result.stdout, key
        assert setting.doc in result.stdout.replace("\n    ", " ") or setting.doc[:30] in result.stdout


@pytest.mark.parametrize("dtype, tokens", [("float32", 1456), ("float16", 2912)])
def test_the_kv_budget_holds_twice_the_tokens_in_float16(dtype, tokens):
    """64 MiB of KV for the bundled model (30 layers, 3 KV heads of 64: 46,080 bytes a float32 token) holds
    1456 float32 tokens or 2912 float16 ones, whole pages of 16 taken; the source names the dtype."""
    result = run_serve(
        "config",
        "show",
        "--format",
        "json",
        "--set",
        "memory.kv_cache_memory_mb=64",
        "--set",
        f"memory.kv_cache_dtype={dtype}",
    )
    assert result.returncode == 0, result.stderr
    shown = {leaf["key"]: leaf for leaf in json.loads(result.stdout)["leaves"]}
    assert shown["memory.kv_cache_tokens"]["value"] == tokens
    assert "memory.kv_cache_dtype" in shown["memory.kv_cache_tokens"]["source"]


def test_the_kv_dtype_is_derived_from_the_activations_and_the_file():
    """By default (int8 activations on the bundled Q4_1 file) the cache is float16, the rule and what it read
    named as its source; int16 activations make it float32; a value given is taken as it is."""

    def shown(*sets):
        args = [a for s in sets for a in ("--set", s)]
        result = run_serve("config", "show", "--format", "json", *args)
        assert result.returncode == 0, result.stderr
        return {leaf["key"]: leaf for leaf in json.loads(result.stdout)["leaves"]}["memory.kv_cache_dtype"]

    default = shown()
    # where the kernels cannot run (no AVX2), exact runs instead: float32
    assert default["value"] == ("float32" if missing_flags("avx2") else "float16")
    source = default["source"]
    assert "kv_dtype_from_rounding" in source
    assert "exec.activation_dtype" in source and "model.path" in source
    assert shown("exec.activation_dtype=int16")["value"] == "float32"
    assert shown("memory.kv_cache_dtype=float32")["value"] == "float32"
