"""deploy/: the Kubernetes manifests validate against the Kubernetes schemas, every example config passes
`serve config validate`, and the Dockerfile installs what the Makefile installs."""

from __future__ import annotations

import re
import subprocess

import kubernetes_validate
import pytest
import yaml

from tests.guards.project_files import ROOT
from tests.moe_checkpoint import write_tiny_mixtral

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
    # The image installs the project itself (with the ray extra), not editable and without the test extra.
    expected = ["'.[ray]'" if item == "-e '.[test,ray]'" else item for item in _installs(makefile)]
    assert _installs(dockerfile) == expected
    text = "\n".join(dockerfile)
    assert "USER roleserve" in text and "HEALTHCHECK" in text
    assert 'ENTRYPOINT ["serve", "--config", "/etc/roleserve/cfg.yaml"]' in text


RAY_MANIFEST = DEPLOY / "kuberay" / "rayjob.yaml"


def _ray_documents() -> dict[str, dict]:
    return {d["kind"]: d for d in yaml.safe_load_all(RAY_MANIFEST.read_text()) if d}


def _pod_templates(rayjob: dict) -> list[dict]:
    cluster = rayjob["spec"]["rayClusterSpec"]
    return [cluster["headGroupSpec"]["template"]] + [g["template"] for g in cluster["workerGroupSpecs"]]


def test_the_kuberay_manifest_is_valid_kubernetes():
    """The RayJob is a custom resource: its pod templates are checked as core/v1 PodTemplates, the other
    documents as themselves."""
    documents = _ray_documents()
    assert set(documents) == {"RayJob", "ConfigMap", "Service"}
    for kind, document in documents.items():
        if kind != "RayJob":
            kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)
    for index, template in enumerate(_pod_templates(documents["RayJob"])):
        pod_template = {
            "apiVersion": "v1",
            "kind": "PodTemplate",
            "metadata": {"name": f"roleserve-{index}"},
            "template": template,
        }
        kubernetes_validate.validate(pod_template, KUBERNETES_VERSION, strict=True)


def test_the_kuberay_job_serves_its_configmap_with_one_worker_per_replica(tmp_path):
    documents = _ray_documents()
    text = documents["ConfigMap"]["data"]["cfg.yaml"]
    config_path = tmp_path / "cfg.yaml"
    config_path.write_text(text)
    result = subprocess.run(
        [SERVE, "config", "validate", "--config", str(config_path)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    config = yaml.safe_load(text)
    rayjob = documents["RayJob"]
    assert rayjob["spec"]["entrypoint"] == "serve --config /etc/roleserve/cfg.yaml"
    [workers] = rayjob["spec"]["rayClusterSpec"]["workerGroupSpecs"]
    assert workers["replicas"] == workers["minReplicas"] == config["parallel"]["dp_size"]
    assert workers["rayStartParams"]["num-cpus"] == str(config["exec"]["threads"])
    head = rayjob["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e["valueFrom"] for e in head["env"]}
    assert env["ROLESERVE_PARALLEL__BIND_HOST"] == {"fieldRef": {"fieldPath": "status.podIP"}}
    assert "secretKeyRef" in env["ROLESERVE_HTTP__API_KEY"] and "api_key" not in text


def _serving_containers() -> list[dict]:
    """The containers that run `serve`: the Deployment's and the RayJob's head."""
    deployment = yaml.safe_load((DEPLOY / "kubernetes" / "deployment.yaml").read_text())
    head = _ray_documents()["RayJob"]["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]
    return [deployment["spec"]["template"]["spec"]["containers"][0], head["spec"]["containers"][0]]


@pytest.mark.parametrize("container", _serving_containers(), ids=["deployment", "rayjob-head"])
def test_liveness_probes_health_and_readiness_probes_ready(container):
    """/health is liveness (a busy server is alive); /ready also says "at capacity": a loaded server must be
    taken out of rotation, never restarted."""
    assert container["livenessProbe"]["httpGet"]["path"] == "/health"
    assert container["readinessProbe"]["httpGet"]["path"] == "/ready"
