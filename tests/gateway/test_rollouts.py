"""A model rollout over real HTTP: version 1 of sentiment-small runs in the gateway, version 2
on a real `hybridinfer node` process; the policy sends a share of the traffic to version 2,
``GET /v1/rollouts`` compares both, and the rollout promotes the candidate by itself — by its
``promote_when`` rule, or by its ``guard:`` block on the figures of the stored traces."""

from __future__ import annotations

import time
from typing import Any

from starlette.testclient import TestClient

from hybridinfer.models.catalog import deployment_info
from tests.conftest import NODE_TOKEN, auth

MODEL = "sentiment-small"
POLICY = """\
version: rollout-v2
rollouts:
  - task: sentiment
    model: sentiment-small
    candidate: "2"
    percent: 30
    promote_when: {min_requests: 90, max_latency_ratio: 1000.0, min_quality_delta: -1.0}
"""


def _register(client: TestClient, url: str, card: dict[str, object]) -> None:
    deployment = deployment_info(card).model_dump(mode="json")
    body = {"id": "edge-v2", "tier": "edge", "zone": "private", "url": url}
    response = client.post(
        "/v1/nodes", headers=auth(NODE_TOKEN), json={**body, "deployments": [deployment]}
    )
    assert response.status_code == 201, response.text


def _node_of(client: TestClient, n: int) -> str:
    response = client.post(
        "/v1/infer",
        headers=auth(),
        # No hedge: the split is of the routed deployment, not of a race's winner (a cold
        # first call outlasts the hedge's head start).
        json={
            "task": "sentiment",
            "inputs": {"text": f"the service was fine, visit {n}"},
            "options": {"hedge": False},
        },
    )
    assert response.status_code == 200, response.text
    return str(response.json()["subtasks"][0]["node"])


def test_a_share_of_traffic_goes_to_version_2_which_is_compared_and_promoted(
    client: TestClient, version_2: tuple[str, dict[str, object]]
) -> None:
    url, card = version_2
    _register(client, url, card)
    assert _node_of(client, 0) == "local"  # before the rollout: the in-process version 1
    applied = client.post("/v1/policies", json={"policy": POLICY}, headers=auth())
    assert applied.status_code == 201, applied.text

    # 160 requests give the candidate ~48 answers: too few to decide (90), so the split is
    # measured before any promotion can happen.
    nodes = [_node_of(client, n) for n in range(1, 161)]
    share = nodes.count("edge-v2") / len(nodes)
    assert 0.2 < share < 0.4, share  # 30 % of request ids, hashed
    assert set(nodes) == {"local", "edge-v2"}
    for n in range(161, 600):  # until the candidate has answered enough to be judged
        if nodes.count("edge-v2") >= 90:
            break
        nodes.append(_node_of(client, n))

    rollout = _decided(client)
    assert rollout["status"] == "promoted", rollout
    assert rollout["percent"] == 100.0
    for side in ("baseline", "candidate_figures"):
        assert rollout[side]["answers"] >= 90
        assert rollout[side]["latency_p50_ms"] > 0.0
        assert 0.0 < rollout[side]["mean_confidence"] <= 1.0
    sides = {d["id"]: d["side"] for d in rollout["deployments"]}
    assert sides == {
        "local/sentiment-small:1": "baseline",
        "edge-v2/sentiment-small:2": "candidate",
    }

    assert {_node_of(client, n) for n in range(200, 230)} == {"edge-v2"}
    entry = client.get("/v1/audit?action=model.rollout", headers=auth()).json()["entries"][0]
    assert (entry["actor"], entry["target"]) == ("system", "sentiment/sentiment-small:2")
    assert entry["after"]["status"] == "promoted"


GUARDED = """\
version: rollout-guarded
rollouts:
  - task: sentiment
    model: sentiment-small
    candidate: "2"
    percent: 30
    guard: {dwell_s: 600, min_requests: 20, max_p99_ratio: 1000.0, p99_slack_ms: 10000}
"""
"""Tolerances wide enough for a node process behind HTTP against the in-process version."""


def test_a_guarded_rollout_is_decided_on_the_guard_figures_of_the_stored_traces(
    client: TestClient, version_2: tuple[str, dict[str, object]]
) -> None:
    url, card = version_2
    _register(client, url, card)
    applied = client.post("/v1/policies", json={"policy": GUARDED}, headers=auth())
    assert applied.status_code == 201, applied.text
    nodes = [_node_of(client, n) for n in range(40)]
    for n in range(40, 400):  # until the candidate has answered enough to be judged
        if nodes.count("edge-v2") >= 20:
            break
        nodes.append(_node_of(client, n))

    rollout = _decided(client)
    assert rollout["status"] == "promoted", rollout
    assert rollout["guard"]["min_requests"] == 20
    entry = client.get("/v1/audit?action=model.rollout", headers=auth()).json()["entries"][0]
    after = entry["after"]
    assert after["breaches"] == []
    assert after["candidate"]["requests"] >= 20
    assert after["baseline"]["requests"] >= 20
    assert after["candidate"]["requests"] + after["baseline"]["requests"] <= len(nodes)
    assert after["candidate"]["error_rate"] == 0.0
    assert after["candidate"]["p99_ms"] > 0.0
    assert after["candidate"]["cloud_share"] == 0.0


def _decided(client: TestClient, timeout_s: float = 15.0) -> dict[str, Any]:
    """The first rollout once it is no longer running (or as it stands after ``timeout_s``)."""
    deadline = time.monotonic() + timeout_s
    rollout: dict[str, Any] = client.get("/v1/rollouts", headers=auth()).json()["rollouts"][0]
    while rollout["status"] == "running" and time.monotonic() < deadline:
        time.sleep(0.2)
        rollout = client.get("/v1/rollouts", headers=auth()).json()["rollouts"][0]
    return rollout
