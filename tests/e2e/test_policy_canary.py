"""Acceptance: a policy canary at 20 % over real HTTP on two real gateway replicas sharing
PostgreSQL; rollback through one replica takes effect on the other within 2 s; both actions
are in the audit log."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from hybridinfer.canary import on_canary_side
from tests.scaleout.conftest import _start, wait_ready

STABLE = "default-3"
CANARY_POLICY = """\
version: canary-1
rules:
  - name: everything-private
    when: "true"
    action: private
cascade:
  sentiment: {target_cloud_share: 0.25}
"""


def _wait(check: object, timeout_s: float, what: str) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        try:
            if check():  # type: ignore[operator]
                return time.monotonic() - started
        except httpx.HTTPError:
            pass
        time.sleep(0.02)
    pytest.fail(f"{what} not within {timeout_s} s")


@pytest.fixture
def replicas(tmp_path: Path, models_dir: Path, postgres_url: str) -> Iterator[list[httpx.Client]]:
    """Two `hybridinfer gateway` processes on one fresh PostgreSQL database."""
    local = {"cache": "memory", "queue": "memory"}
    gateways = [_start(tmp_path, models_dir, postgres_url, local) for _ in range(2)]
    clients = [gateway.client() for gateway in gateways]
    try:
        for gateway in gateways:
            wait_ready(gateway)
        yield clients
    finally:
        for client in clients:
            client.close()
        for gateway in gateways:
            gateway.stop()


def _policy_of(client: httpx.Client, routing_key: str | None = None) -> str:
    headers = {} if routing_key is None else {"X-Routing-Key": routing_key}
    response = client.post(
        "/v1/infer", headers=headers, json={"task": "sentiment", "inputs": {"text": "so good"}}
    )
    assert response.status_code == 200, response.text
    return response.headers["X-Hybridinfer-Policy"]


def _traced_versions(client: httpx.Client, request_ids: set[str]) -> list[str]:
    traces = client.get("/v1/traces", params={"limit": 1000}).json()["traces"]
    return [t["policy_version"] for t in traces if t["request_id"] in request_ids]


def test_canary_at_20_percent_then_rollback_within_2_s_on_the_other_replica(
    replicas: list[httpx.Client],
) -> None:
    first, second = replicas
    staged = first.post(
        "/v1/policies?stage=true",
        content=CANARY_POLICY,
        headers={"Content-Type": "application/yaml"},
    )
    assert staged.status_code == 201, staged.text
    canary = first.post("/v1/policies/canary-1/canary", json={"percent": 20})
    assert canary.json() == {"active": STABLE, "canary": {"version": "canary-1", "percent": 20}}
    _wait(lambda: second.get("/v1/policies").json()["canary"] is not None, 3, "canary on replica 2")

    request_ids: set[str] = set()
    served: list[str] = []
    for n in range(1000):
        replica = replicas[n % 2]  # the load balancer's round robin
        response = replica.post(
            "/v1/infer", json={"task": "sentiment", "inputs": {"text": f"review number {n}"}}
        )
        assert response.status_code == 200, response.text
        request_ids.add(response.json()["request_id"])
        served.append(response.headers["X-Hybridinfer-Policy"])
    share = served.count("canary-1") / len(served)
    print(f"canary share over {len(served)} requests: {share:.3f}")
    assert 0.17 <= share <= 0.23, share
    assert set(served) == {STABLE, "canary-1"}

    # The traces (written by both replicas to the shared store) say the same.
    _wait(lambda: len(_traced_versions(first, request_ids)) == 1000, 30, "1000 traces stored")
    assert sorted(_traced_versions(first, request_ids)) == sorted(served)

    # A caller with a routing key stays on its side; pick one on the canary side.
    key = next(f"user-{n}" for n in range(1000) if on_canary_side(f"user-{n}", "canary-1", 20))
    assert {_policy_of(second, key) for _ in range(5)} == {"canary-1"}

    started = time.monotonic()
    rolled = first.post("/v1/policies/canary-1/rollback")
    assert rolled.json() == {"active": STABLE, "canary": None}
    assert _policy_of(first, key) == STABLE  # the replica that acted: at once
    _wait(lambda: _policy_of(second, key) == STABLE, 2.0, "rollback on replica 2")
    took = time.monotonic() - started
    print(f"rollback live on the other replica after {took * 1000:.0f} ms")
    assert took < 2.0
    assert {_policy_of(second, key) for _ in range(5)} == {STABLE}

    entries = second.get("/v1/audit", params={"action": "policy.canary"}).json()["entries"]
    assert entries[0]["target"] == "canary-1"
    assert entries[0]["after"]["canary"] == {"version": "canary-1", "percent": 20}
    entries = second.get("/v1/audit", params={"action": "policy.rollback"}).json()["entries"]
    assert entries[0]["before"]["canary"] == {"version": "canary-1", "percent": 20}
    assert entries[0]["after"] == {"active": STABLE, "canary": None}
