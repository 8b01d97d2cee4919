"""The OpenAPI document describes every route, and schemathesis fuzzes every operation of a
real gateway (real HTTP) against it, with the right key: no internal errors (500), no status
code, content type or body that the document does not allow."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bench.processes import upstream_process
from bench.upstream import MODEL
from hypothesis import HealthCheck, given, settings
from pydantic import SecretStr
from starlette.testclient import TestClient

from hybridinfer.core.schemas import DeploymentInfo, NodeRegistration
from hybridinfer.core.topology import Tier, Zone
from hybridinfer.gateway.openapi import endpoints, is_public
from hybridinfer.settings import Settings
from tests.conftest import ADMIN_KEY, NODE_TOKEN
from tests.gatewayserver import running_gateway
from tests.peers import free_port, require

schemathesis = require("schemathesis")
from schemathesis.specs.openapi.checks import (  # noqa: E402
    content_type_conformance,
    negative_data_rejection,
    response_schema_conformance,
    status_code_conformance,
)

KEYS = {"infer": ADMIN_KEY, "admin": ADMIN_KEY, "node": NODE_TOKEN, None: ADMIN_KEY}
RESPONSES: Counter[int] = Counter()
SERVER_ERRORS: Counter[str] = Counter()
CAPACITY_CODES = {"deadline_exceeded"}
"""The only 5xx the fuzzing may meet: a deadline the fuzzed request set itself too short for
any model to answer in (504, the contract's answer). Every capability has a node: the local
models in process, and chat and embeddings on an OpenAI-style upstream on every tier."""


def test_every_route_is_described_with_its_auth(client: TestClient) -> None:
    document = client.get("/openapi.json").json()
    seen = 0
    for method, path, endpoint in endpoints(list(client.app.routes)):  # type: ignore[attr-defined]
        operation = document["paths"][path][method.lower()]
        assert operation["summary"] != "(undescribed)", f"{method} {path}"
        assert operation["x-required-scope" if not is_public(path) else "security"] == (
            [] if is_public(path) else endpoint.required_scope
        ), f"{method} {path}"
        assert {"400", "404", "413", "422"} <= set(operation["responses"]), f"{method} {path}"
        seen += 1
    assert seen >= 30


def _upstream_nodes(url: str) -> list[NodeRegistration]:
    """Chat and embeddings on the upstream, on every tier (any forced route has a node)."""
    deployments = [
        DeploymentInfo(model=MODEL, version="1", capability=capability, quality=0.5, latency_ms=1)
        for capability in ("chat", "embedding")
    ]
    return [
        NodeRegistration(
            id=f"upstream-{tier}",
            tier=tier,
            zone=zone,
            url=url,
            protocol="openai",
            deployments=deployments,
        )
        for tier, zone in (
            (Tier.LOCAL, Zone.PRIVATE),
            (Tier.EDGE, Zone.PRIVATE),
            (Tier.CLOUD, Zone.PUBLIC),
        )
    ]


def _gateway_settings(directory: Path, models_dir: Path, upstream: str) -> Settings:
    return Settings(
        static_nodes=_upstream_nodes(upstream),
        data_dir=directory,
        models_dir=models_dir,
        port=free_port(),
        bootstrap_key=SecretStr(ADMIN_KEY),
        node_token=SecretStr(NODE_TOKEN),
        rate_limit_per_minute=10_000_000,
        request_timeout_ms=5_000,
        names_process=False,  # the test process's one loaded model: ready at once
    )


@pytest.fixture(scope="module")
def gateways(
    models_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, str]]:
    """Two real gateways: node operations (registrations of fuzzed nodes) go to their own, so
    that they cannot steer the inference the other one is fuzzed with."""
    with upstream_process(free_port()) as upstream:
        main = _gateway_settings(tmp_path_factory.mktemp("fuzz"), models_dir, upstream)
        nodes = _gateway_settings(tmp_path_factory.mktemp("fuzz-nodes"), models_dir, upstream)
        with running_gateway(main), running_gateway(nodes):
            yield {
                "main": f"http://127.0.0.1:{main.port}",
                "node": f"http://127.0.0.1:{nodes.port}",
            }


@pytest.fixture(scope="module")
def api_schema(gateways: dict[str, str]) -> Any:
    return schemathesis.openapi.from_url(gateways["main"] + "/openapi.json")


def no_internal_error(ctx: Any, response: Any, case: Any) -> bool | None:
    """A 5xx is allowed only where documented (status conformance) and never a 500."""
    RESPONSES[response.status_code] += 1
    if response.status_code == 500:
        raise AssertionError(f"500 from {case.method} {case.path}: {response.text[:300]}")
    if response.status_code > 500:
        code = response.json()["error"]["code"]
        SERVER_ERRORS[f"{case.method} {case.path} {response.status_code} {code}"] += 1
        if code not in CAPACITY_CODES:
            raise AssertionError(f"{case.method} {case.path}: {response.text[:300]}")
    return None


CHECKS = [
    no_internal_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    negative_data_rejection,
]


def fuzz(operation: Any, gateways: dict[str, str]) -> None:
    scope = operation.definition.raw.get("x-required-scope")
    base = gateways["node" if scope == "node" else "main"]

    @settings(
        max_examples=25,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy())
    def call(case: Any) -> None:
        headers = {**(case.headers or {}), "Authorization": f"Bearer {KEYS[scope]}"}
        case.call_and_validate(base_url=base, headers=headers, timeout=30, checks=CHECKS)

    call()


@pytest.mark.integration
def test_fuzzed_requests_get_documented_answers(api_schema: Any, gateways: dict[str, str]) -> None:
    failures: list[str] = []
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) >= 30
    for operation in operations:
        try:
            fuzz(operation, gateways)
        except (Exception, BaseExceptionGroup) as failure:  # every operation's verdict
            failures.append(f"{operation.label}: {str(failure)[:1500]}")
    assert not failures, "\n\n".join(failures)
    assert sum(RESPONSES.values()) >= 25 * 20
    assert RESPONSES[500] == 0
    print("responses by status:", dict(sorted(RESPONSES.items())), dict(SERVER_ERRORS))
