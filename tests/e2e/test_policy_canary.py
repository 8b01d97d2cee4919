"""Acceptance: a policy canary at 20 % over real HTTP on two real gateway replicas sharing
PostgreSQL; rollback through one replica (one CLI command) takes effect on the other within
2 s; both actions are in the audit log."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from hybridinfer.cli import main
from hybridinfer.policy.canary import on_canary_side
from tests.conftest import ADMIN_KEY
from tests.scaleout.conftest import _start, wait_ready

STABLE = "default-4"
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


def command(*args: str, url: httpx.URL) -> str:
    """``hybridinfer ARGS --url URL`` with the admin key; its output."""
    result = CliRunner().invoke(main, [*args, "--url", str(url), "--key", ADMIN_KEY])
    assert result.exit_code == 0, result.output
    return result.output


def _policy_of(client: httpx.Client, routing_key: str | None = None) -> str:
    headers = {} if routing_key is None else {"X-Routing-Key": routing_key}
    response = client.post(
        "/v1/infer", headers=headers, json={"task": "sentiment", "inputs": {"text": "so good"}}
    )
    assert response.status_code == 200, response.text
    return response.headers["X-Hybridinfer-Policy"]


def _canary_then_rollback(first: httpx.Client, second: httpx.Client, key: str) -> float:
    """Seconds from sending a rollback to one replica until the other serves the old policy."""
    first.post("/v1/policies/canary-1/canary", json={"percent": 20}).raise_for_status()
    _wait(lambda: _policy_of(second, key) == "canary-1", 3, "canary on replica 2")
    started = time.monotonic()
    first.post("/v1/policies/canary-1/rollback").raise_for_status()
    _wait(lambda: _policy_of(second, key) == STABLE, 2.0, "rollback on replica 2")
    return time.monotonic() - started


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
    diff = command("policy", "diff", STABLE, "canary-1", url=first.base_url)
    assert diff.startswith("--- default-4\n+++ canary-1\n")
    assert "\n-version: default-4\n" in diff
    assert "\n+version: canary-1\n" in diff
    canary = command("policy", "canary", "canary-1", "--percent", "20", url=first.base_url)
    assert canary == "active default-4; canary canary-1 at 20 %\n"
    _wait(lambda: second.get("/v1/policies").json()["canary"] is not None, 3, "canary on replica 2")

    request_ids: set[str] = set()
    served: list[str] = []
    for n in range(1000):
        replica = replicas[n % 2]  # the load balancer's round robin
        response = replica.post(
            "/v1/infer",
            headers={"X-Request-ID": f"review-{n}"},  # fixed ids: the same split every run
            json={"task": "sentiment", "inputs": {"text": f"review number {n}"}},
        )
        assert response.status_code == 200, response.text
        request_ids.add(response.json()["request_id"])
        served.append(response.headers["X-Hybridinfer-Policy"])
        expected = "canary-1" if on_canary_side(f"review-{n}", "canary-1", 20.0) else STABLE
        assert served[-1] == expected
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
    rolled = command("policy", "rollback", "canary-1", url=first.base_url)  # one command
    assert rolled == "active default-4\n"
    assert _policy_of(first, key) == STABLE  # the replica that acted: at once
    _wait(lambda: _policy_of(second, key) == STABLE, 2.0, "rollback on replica 2")
    took = time.monotonic() - started
    assert took < 2.0
    assert {_policy_of(second, key) for _ in range(5)} == {STABLE}
    took_all = [took, *(_canary_then_rollback(first, second, key) for _ in range(4))]
    print("rollback live on the other replica after (ms):", [round(t * 1000) for t in took_all])
    assert max(took_all) < 2.0

    entries = second.get("/v1/audit", params={"action": "policy.canary"}).json()["entries"]
    assert len(entries) == 5
    assert entries[-1]["target"] == "canary-1"
    assert entries[-1]["before"] == {"active": STABLE, "canary": None}
    assert entries[-1]["after"]["canary"] == {"version": "canary-1", "percent": 20}
    entries = second.get("/v1/audit", params={"action": "policy.rollback"}).json()["entries"]
    assert len(entries) == 5
    assert entries[-1]["before"]["canary"] == {"version": "canary-1", "percent": 20}
    assert entries[-1]["after"] == {"active": STABLE, "canary": None}
