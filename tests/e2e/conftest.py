"""Fixtures for end-to-end tests: one tiny random model and one server shared by a module's tests."""

from __future__ import annotations

import pytest

from tests.tiny_checkpoint import write_tiny_llama


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    return write_tiny_llama(tmp_path_factory.mktemp("tiny-model"))


@pytest.fixture(scope="session")
def slow_model(tmp_path_factory):
    """Wide enough that a 1900-token answer takes seconds: time to act while a request still runs."""
    return write_tiny_llama(
        tmp_path_factory.mktemp("slow-model"),
        hidden_size=512,
        intermediate_size=1536,
        num_hidden_layers=8,
        num_attention_heads=8,
        num_key_value_heads=4,
    )


def tiny_config(model_path, **namespaces) -> dict:
    config = {
        "model": {"path": str(model_path), "served_name": "tiny"},
        "memory": {"kv_cache_tokens": 8192, "page_size": 16},
        "exec": {"threads": 1},
    }
    for namespace, leaves in namespaces.items():
        config[namespace] = {**config.get(namespace, {}), **leaves}
    return config
