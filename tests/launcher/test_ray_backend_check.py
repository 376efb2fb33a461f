"""parallel.backend ray before anything starts: what it cannot run is a config error (exit 2, file, line, key),
and what it derives is shown with its source."""

from __future__ import annotations

import json

import pytest
from serve_command import run_serve

from launcher.port_check import free_tcp_ports


def validate(tmp_path, parallel: str, extra: str = ""):
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(f"model:\n  path: smollm2\nparallel:\n  backend: ray\n{parallel}{extra}")
    return cfg, run_serve("config", "validate", "--config", str(cfg))


@pytest.mark.parametrize(
    ("parallel", "extra", "where", "message"),
    [
        ("", "weight_cache:\n  enabled: true\n", "4:12: parallel.backend", "ray actors load their weights"),
        ("  bind_host: 0.0.0.0\n", "", "5:14: parallel.bind_host", "must name one address of this machine"),
    ],
    ids=["weight cache", "every interface"],
)
def test_what_ray_cannot_run_is_a_config_error(tmp_path, parallel, extra, where, message):
    cfg, result = validate(tmp_path, parallel, extra)
    assert result.returncode == 2
    assert f"{cfg}:{where}: {message}" in result.stderr


def test_a_valid_ray_config_derives_each_bundle_from_exec_threads(tmp_path):
    cfg, result = validate(tmp_path, "  dp_size: 2\n", "exec:\n  threads: 3\n")
    assert result.returncode == 0, result.stderr
    shown = run_serve("roles", "inspect", "--config", str(cfg), "--format", "json")
    launcher = next(p for p in json.loads(shown.stdout)["processes"] if p["role"] == "launcher")
    leaf = next(leaf for leaf in launcher["leaves"] if leaf["key"] == "parallel.ray_cpus_per_replica")
    assert leaf["value"] == 3 and "exec.threads" in leaf["source"]


def test_a_cluster_address_nobody_answers_fails_at_once_naming_it(tmp_path):
    closed, http_port = free_tcp_ports("127.0.0.1", 2)  # free: nothing listens there
    cfg, _ = validate(tmp_path, f"  ray_address: 127.0.0.1:{closed}\n", f"http:\n  port: {http_port}\n")
    result = run_serve("--config", str(cfg), timeout=120)
    assert result.returncode == 1
    assert f"no Ray cluster answers at parallel.ray_address='127.0.0.1:{closed}'" in result.stderr
