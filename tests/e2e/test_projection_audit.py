"""Projections equal the reads: the real server in record mode, driven through every endpoint and feature
(completions, chat, streams, embeddings, the weight cache, an MoE on two expert-parallel ranks with the
expert backup, a recording and a rebalance), then `serve roles audit` must find no role reading outside its
projection and no role declaring a namespace it never reads."""

from __future__ import annotations

import json
import os
import subprocess

import httpx
import openai
import pytest
from serve_harness import SERVE, ServeProcess

from conftest import tiny_config
from launcher.role_list import ROLES
from tests.moe_checkpoint import write_tiny_mixtral


@pytest.fixture(scope="module")
def audited(tmp_path_factory):
    config = tiny_config(
        write_tiny_mixtral(tmp_path_factory.mktemp("tiny-mixtral")),
        roles={"enforcement": "record"},
        parallel={"dp_size": 2, "ep_size": 2, "load_balance": "shortest_queue"},
        encoder={"enabled": True},
        weight_cache={"enabled": True},
        expert_backup={"enabled": True},
        exec={"moe": {"num_redundant_experts": 2, "expert_balancedness_report_mode": "both"}},
    )
    with ServeProcess(tmp_path_factory.mktemp("audit"), config) as server:
        client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)
        for _ in range(2):  # both replicas see work
            client.completions.create(model="tiny", prompt="Hello", max_tokens=4, temperature=0)
        chat = [{"role": "user", "content": "Hi"}]
        client.chat.completions.create(model="tiny", messages=chat, max_tokens=4)
        list(client.completions.create(model="tiny", prompt="Hi", max_tokens=3, stream=True))
        list(client.chat.completions.create(model="tiny", messages=chat, max_tokens=3, stream=True))
        client.embeddings.create(model="all-minilm-l6-v2", input=["a sentence", "another"])
        client.models.list()
        for path in ("/health", "/metrics", "/roles"):
            assert httpx.get(server.url + path, timeout=30).status_code == 200, path
        for action in ("expert_distribution/start", "expert_distribution/stop", "eplb/rebalance"):
            assert httpx.post(f"{server.url}/admin/{action}", timeout=60).status_code == 200, action
        env = {k: v for k, v in os.environ.items() if not k.startswith("ROLESERVE_")}
        result = subprocess.run(
            [SERVE, "roles", "audit", "--url", server.url, "--format", "json"],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        assert result.returncode == 0, result.stderr
        yield {row["role"]: row for row in json.loads(result.stdout)}


def test_every_running_role_was_audited_in_record_mode(audited):
    assert sorted(audited) == sorted(ROLES.names())
    assert all(row["modes"] == ["record"] for row in audited.values())


@pytest.mark.parametrize("role", ROLES.names())
def test_role_reads_exactly_its_projection(audited, role):
    row = audited[role]
    assert row["read_outside_projection"] == [], f"{role} read outside its projection: {row}"
    assert row["declared_never_read"] == [], f"{role} declares namespaces it never read: {row}"
    assert row["declared"] == [ns for ns in row["proposed_projection"]]
