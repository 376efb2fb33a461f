"""`serve roles inspect --url` against a running server agrees with the offline form; /roles honours auth."""

from __future__ import annotations

import json
import os
import subprocess

import httpx
import openai
import pytest
from serve_harness import SERVE, ServeProcess

from conftest import tiny_config

API_KEY = "sk-test-secret"


@pytest.fixture(scope="module")
def server(tiny_model, tmp_path_factory):
    config = tiny_config(tiny_model, http={"api_key": API_KEY}, roles={"enforcement": "record"})
    with ServeProcess(tmp_path_factory.mktemp("inspect"), config) as running:
        yield running


def run_cli(*args: str, with_key: bool = True) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROLESERVE_")}
    if with_key:  # the CLI authenticates to /roles with the key it resolves
        env["ROLESERVE_HTTP__API_KEY"] = API_KEY
    return subprocess.run([SERVE, *args], capture_output=True, text=True, timeout=120, env=env)


def test_api_key_is_required_everywhere_but_health(server):
    assert httpx.get(server.url + "/health").status_code == 200
    for path in ("/v1/models", "/roles", "/metrics"):
        response = httpx.get(server.url + path)
        assert response.status_code == 401, path
        assert response.json()["error"]["code"] == "invalid_api_key"
    wrong = httpx.get(server.url + "/v1/models", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401 and wrong.json()["error"]["message"] == "Incorrect API key provided"
    client = openai.OpenAI(base_url=server.url + "/v1", api_key=API_KEY, max_retries=0)
    assert client.models.list().data[0].id == "tiny"


def test_live_inspect_agrees_with_offline_inspect(server):
    live = run_cli("roles", "inspect", "--url", server.url, "--format", "json")
    assert live.returncode == 0, live.stderr
    processes = json.loads(live.stdout)["processes"]
    offline = run_cli(
        "roles", "inspect", "--config", str(server.config_path), "--format", "json", with_key=False
    )
    expected = {p["role"]: p for p in json.loads(offline.stdout)["processes"]}
    assert {p["role"] for p in processes} == {"launcher", "tokenizer", "scheduler"}
    for process in processes:
        want = expected[process["role"]]
        assert process["pid"] > 0 and process["published_at"] > 0
        assert process["fingerprint"] == want["fingerprint"]
        assert process["projection"] == want["projection"]
        assert process["leaves"] == want["leaves"]
    assert API_KEY not in live.stdout


def test_live_inspect_one_role_as_a_table_and_the_audit(server):
    client = openai.OpenAI(base_url=server.url + "/v1", api_key=API_KEY, max_retries=0)
    client.completions.create(model="tiny", prompt="Hi", max_tokens=2)
    table = run_cli("roles", "inspect", "--url", server.url, "--role", "scheduler")
    assert table.returncode == 0 and table.stdout.startswith("== role scheduler[0]  pid ")
    assert "read schedule.max_running_requests" in table.stdout  # record mode shows the scheduler's reads
    audit = run_cli("roles", "audit", "--url", server.url, "--format", "json")
    rows = {row["role"]: row for row in json.loads(audit.stdout)}
    assert "schedule" in rows["scheduler"]["read"] and "memory" in rows["scheduler"]["read"]
    assert rows["scheduler"]["read_outside_projection"] == []
    assert set(rows["scheduler"]["proposed_projection"]) <= set(rows["scheduler"]["declared"])
