"""A secret reaches only the roles that project its namespace: not their config record, not their environment,
not what they publish."""

from __future__ import annotations

import httpx
from serve_harness import ServeProcess

from conftest import tiny_config

API_KEY = "sk-only-for-the-front"


def test_the_api_key_reaches_only_the_http_front(tiny_model, tmp_path):
    config = tiny_config(tiny_model, roles={"enforcement": "record"})
    with ServeProcess(tmp_path, config, env={"ROLESERVE_HTTP__API_KEY": API_KEY}) as server:
        headers = {"Authorization": f"Bearer {API_KEY}"}
        assert httpx.get(server.url + "/v1/models", timeout=30).status_code == 401  # the front has the key
        processes = httpx.get(server.url + "/roles", headers=headers, timeout=30).json()["processes"]
        assert API_KEY not in str(processes)
        by_role = {p["role"]: p for p in processes}
        # The tokenizer is spawned after the launcher cleared the config environment; the scheduler is forked from
        # the preloaded parent, started without it.
        for role in ("scheduler", "tokenizer"):
            environ = open(f"/proc/{by_role[role]['pid']}/environ", "rb").read()
            assert API_KEY.encode() not in environ, role
        leaves = {leaf["key"]: leaf for leaf in by_role["scheduler"]["leaves"]}
        # record mode shows the scheduler every non-secret leaf; the secret is withheld, not masked
        assert leaves["http.port"]["value"] == server.port
        assert leaves["http.api_key"] == {
            "key": "http.api_key",
            "value": "(withheld)",
            "source": "(withheld)",
        }
        front = {leaf["key"]: leaf for leaf in by_role["tokenizer"]["leaves"]}
        assert front["http.api_key"]["value"] == "***"
        assert front["http.api_key"]["source"] == "env ROLESERVE_HTTP__API_KEY"
