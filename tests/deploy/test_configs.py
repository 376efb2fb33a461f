"""Every example config under deploy/configs names only declared settings with valid values."""

import pytest

from runtime_context.yaml_source import read_yaml_config
from tests.guards.project_files import ROOT

CONFIGS = sorted((ROOT / "deploy" / "configs").glob("*.yaml"))


@pytest.mark.parametrize("path", CONFIGS, ids=[p.name for p in CONFIGS])
def test_example_config_has_no_problems(path):
    assignments, problems = read_yaml_config(str(path))
    assert problems == [] and assignments
