"""deploy/ checked offline: every Kubernetes manifest against the API schemas that ship in
the `kubernetes-validate` package (no cluster, no network), the configs they carry against
our own settings and policy schemas, and the compose file's shape."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from hybridinfer.policy.document import compile_policy
from hybridinfer.settings import NodeSettings, Settings, refuse_secrets_in_file
from hybridinfer.yamlfile import load_with_lines, parse_document
from tests.conftest import REPO
from tests.peers import require

DEPLOY = REPO / "deploy"
KUBERNETES_VERSION = "1.30.0"
MANIFESTS = sorted((DEPLOY / "kubernetes").glob("*.yaml"))


def documents(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda path: path.name)
def test_manifests_validate_against_the_kubernetes_schemas(path: Path) -> None:
    validator = require("kubernetes_validate")
    for document in documents(path):
        validator.validate(document, KUBERNETES_VERSION, strict=True)


def test_the_gateway_has_probes_an_autoscaler_and_no_secret_in_its_config() -> None:
    kinds = {
        (doc["kind"], doc["metadata"]["name"]) for path in MANIFESTS for doc in documents(path)
    }
    assert ("HorizontalPodAutoscaler", "hybridinfer-gateway") in kinds
    assert ("Deployment", "hybridinfer-edge") in kinds
    [gateway] = [
        doc
        for doc in documents(DEPLOY / "kubernetes" / "gateway.yaml")
        if doc["kind"] == "Deployment"
    ]
    container = gateway["spec"]["template"]["spec"]["containers"][0]
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"


def test_the_configs_in_the_config_maps_are_valid() -> None:
    maps = {
        doc["metadata"]["name"]: doc["data"]
        for doc in documents(DEPLOY / "kubernetes" / "configmap.yaml")
    }
    gateway_text = maps["hybridinfer-config"]["gateway.yaml"]
    data, lines = load_with_lines(gateway_text, "gateway.yaml")
    refuse_secrets_in_file(data, lines, "gateway.yaml")
    settings = parse_document(Settings, gateway_text, "gateway.yaml")
    assert (settings.cache, settings.queue) == ("redis", "nats")
    NodeSettings.model_validate(yaml.safe_load(maps["hybridinfer-config"]["node-edge.yaml"]))
    compile_policy(maps["hybridinfer-policy"]["policy.yaml"], "policy.yaml")


def test_the_compose_file_runs_three_gateways_on_shared_state() -> None:
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    services = compose["services"]
    assert {"postgres", "redis", "nats", "gateway-1", "gateway-2", "gateway-3"} <= set(services)
    assert "-js" in services["nats"]["command"]
    gateway_config = yaml.safe_load(compose["configs"]["gateway"]["content"])
    assert Settings.model_validate(gateway_config).cache == "redis"
