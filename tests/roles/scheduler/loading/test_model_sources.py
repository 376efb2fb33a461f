"""The scheduler process maps cached weights or backed-up experts, or falls back as each daemon's
on_unavailable says."""

from types import SimpleNamespace

import pytest
import zmq

from roles.endpoints import Endpoints
from roles.scheduler.engine.settings import engine_config_from_context
from roles.scheduler.loading.sources import expert_backup_weights, shared_model_or_none
from roles.scheduler.role import ROLE
from runtime_context import publish, resolve
from tests.tiny_checkpoint import write_tiny_llama


def link_to(address: str | None, tmp_path, backup: str | None = None):
    endpoints = Endpoints(
        str(tmp_path), num_tokenizers=1, dp_size=1, weight_cache=address, expert_backup=backup
    )
    return SimpleNamespace(endpoints=endpoints, zmq_context=zmq.Context.instance())


def scheduler_config(tiny, *sets):
    publish(
        resolve(
            sets=[f"model.path={tiny}", "memory.kv_cache_tokens=1024", "weight_cache.enabled=true", *sets],
            environ={},
        ),
        role="scheduler",
        projection=ROLE.projection,
    )
    return engine_config_from_context()


def test_daemon_down_falls_back_to_disk(tmp_path, caplog):
    tiny = write_tiny_llama(tmp_path / "tiny")
    config = scheduler_config(tiny)
    assert shared_model_or_none(link_to(f"ipc://{tmp_path}/down", tmp_path), config) is None
    assert "weight cache unavailable" in caplog.text and "loading" in caplog.text


def test_daemon_down_with_fail_policy_stops_the_scheduler(tmp_path):
    tiny = write_tiny_llama(tmp_path / "tiny")
    config = scheduler_config(tiny, "weight_cache.on_unavailable=fail")
    with pytest.raises(SystemExit, match="weight_cache.on_unavailable is fail"):
        shared_model_or_none(link_to(f"ipc://{tmp_path}/down", tmp_path), config)


def test_cache_disabled_never_asks(tmp_path, caplog):
    """Given a daemon address that is down and the fail policy: asking at all would stop the scheduler."""
    tiny = write_tiny_llama(tmp_path / "tiny")
    config = scheduler_config(tiny, "weight_cache.enabled=false", "weight_cache.on_unavailable=fail")
    assert shared_model_or_none(link_to(f"ipc://{tmp_path}/down", tmp_path), config) is None
    assert "weight cache" not in caplog.text


@pytest.mark.parametrize("policy", ["load_from_disk", "fail"])
def test_an_expert_backup_that_is_down_falls_back_or_stops_as_configured(tmp_path, caplog, policy):
    tiny = write_tiny_llama(tmp_path / "tiny")
    config = scheduler_config(tiny, f"expert_backup.on_unavailable={policy}")
    link = link_to(None, tmp_path, backup=f"ipc://{tmp_path}/backup-down")
    if policy == "fail":
        with pytest.raises(SystemExit, match="expert_backup.on_unavailable is fail"):
            expert_backup_weights(link, config)
    else:
        assert expert_backup_weights(link, config) is None
        assert "expert_backup unavailable" in caplog.text and "reading the experts from" in caplog.text
