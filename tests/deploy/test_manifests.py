"""deploy/: the Kubernetes manifests validate against the Kubernetes schemas, every example config passes
`serve config validate`, and the Dockerfile installs what the Makefile installs."""

from __future__ import annotations

import re
import subprocess

import pytest
import yaml

from tests.guards.project_files import ROOT
from tests.moe_checkpoint import write_tiny_mixtral

kubernetes_validate = pytest.importorskip("kubernetes_validate")

DEPLOY = ROOT / "deploy"
MANIFESTS = sorted((DEPLOY / "kubernetes").glob("*.yaml"))
CONFIGS = sorted((DEPLOY / "configs").glob("*.yaml"))
SERVE = str(ROOT / ".venv" / "bin" / "serve")
KUBERNETES_VERSION = "1.30.0"


@pytest.mark.parametrize("path", MANIFESTS, ids=[p.name for p in MANIFESTS])
def test_manifest_is_valid_kubernetes(path):
    documents = [d for d in yaml.safe_load_all(path.read_text()) if d]
    assert documents
    for document in documents:
        kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)


def test_the_configmap_holds_a_config_the_server_accepts(tmp_path):
    configmap = yaml.safe_load((DEPLOY / "kubernetes" / "configmap.yaml").read_text())
    config = tmp_path / "cfg.yaml"
    config.write_text(configmap["data"]["cfg.yaml"])
    result = subprocess.run(
        [SERVE, "config", "validate", "--config", str(config)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


def test_the_deployment_drains_longer_than_the_server_and_asks_for_its_threads():
    deployment = yaml.safe_load((DEPLOY / "kubernetes" / "deployment.yaml").read_text())
    config = yaml.safe_load(
        yaml.safe_load((DEPLOY / "kubernetes" / "configmap.yaml").read_text())["data"]["cfg.yaml"]
    )
    spec = deployment["spec"]["template"]["spec"]
    assert spec["terminationGracePeriodSeconds"] > config["launcher"]["shutdown_timeout_s"]
    container = spec["containers"][0]
    assert container["resources"]["requests"]["cpu"] == str(config["exec"]["threads"])
    assert {e["name"] for e in container["env"]} == {"ROLESERVE_HTTP__API_KEY"}
    assert "api_key" not in yaml.safe_dump(config)  # the key comes from the Secret only


@pytest.mark.parametrize("path", CONFIGS, ids=[p.name for p in CONFIGS])
def test_example_config_validates(path, tmp_path):
    """The MoE examples name a folder `make serve-moe` builds; a tiny Mixtral stands in for it here."""
    sets = []
    if ".cache/" in path.read_text():
        sets = ["--set", f"model.path={write_tiny_mixtral(tmp_path / 'moe')}"]
    result = subprocess.run(
        [SERVE, "config", "validate", "--config", str(path), *sets], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


def _installs(lines: list[str]) -> list[str]:
    """What each `pip install` line installs, flags and environment aside."""
    installs = []
    for line in lines:
        match = re.search(r"pip install -q (.+)$", line.strip())
        if match:
            installs.append(match.group(1).strip())
    return installs


def test_the_dockerfile_installs_what_the_makefile_installs():
    makefile = (ROOT / "Makefile").read_text().splitlines()
    dockerfile = (DEPLOY / "Dockerfile").read_text().splitlines()
    # The image installs the project itself, not editable and without the test extra.
    expected = ["." if item == "-e '.[test]'" else item for item in _installs(makefile)]
    assert _installs(dockerfile) == expected
    text = "\n".join(dockerfile)
    assert "USER roleserve" in text and "HEALTHCHECK" in text
    assert 'ENTRYPOINT ["serve", "--config", "/etc/roleserve/cfg.yaml"]' in text
