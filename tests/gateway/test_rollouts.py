"""A model rollout over real HTTP: version 1 of sentiment-small runs in the gateway, version 2
on a real `hybridinfer node` process; the policy sends a share of the traffic to version 2,
``GET /v1/rollouts`` compares both, and the rollout promotes the candidate by itself — by its
``promote_when`` rule, or by walking its ``guard:`` block's steps on the figures of the stored
traces; a version made slow by the node's fault drill is rolled back in its first step."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
from starlette.testclient import TestClient

from hybridinfer.gateway.routes import ROUTING_KEY_HEADER
from hybridinfer.models.catalog import deployment_info
from tests.conftest import NODE_TOKEN, auth
from tests.peers import version_2_node

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
        # The caller's routing key picks the side, so the split over n is the same every run
        # (request ids are random: 160 of them fall outside 20-40 % about once in a hundred).
        headers={**auth(), ROUTING_KEY_HEADER: f"caller-{n}"},
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
    assert 0.2 < share < 0.4, share  # 30 % of routing keys, hashed
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
    guard: {steps: [20, 50, 100], dwell_s: 1, min_requests: 8, max_p99_ratio: 1000.0,
            p99_slack_ms: 10000}
"""
"""Tolerances wide enough for a node process behind HTTP against the in-process version."""


def test_a_guarded_rollout_walks_its_steps_to_100_and_is_promoted(
    client: TestClient, version_2: tuple[str, dict[str, object]]
) -> None:
    url, card = version_2
    _register(client, url, card)
    applied = client.post("/v1/policies", json={"policy": GUARDED}, headers=auth())
    assert applied.status_code == 201, applied.text
    seen = _serve_while_running(client)  # until the walk has stepped through 20, 50 and 100 %
    shares = [state["percent"] for state in seen]
    rollout = seen[-1]
    assert rollout["status"] == "promoted", rollout
    assert [s for i, s in enumerate(shares) if i == 0 or shares[i - 1] != s] == [
        20.0,
        50.0,
        100.0,
    ], "each step served in turn, as /v1/rollouts shows it"
    walk = rollout["walk"]
    assert walk["status"] == "promoted"
    steps = walk["state"]["steps"]
    assert [s["step"] for s in steps] == [0, 1, 2]
    assert all(s["canary"]["requests"] >= 8 for s in steps)
    assert all(s["canary"]["error_rate"] == 0.0 for s in steps)
    actions = [e["action"] for e in _audit(client) if e["action"].startswith("model.walk.")]
    assert actions.count("model.walk.step") == 2
    assert {"model.walk.start", "model.walk.promote"} <= set(actions)
    (entry,) = _audit(client, "model.rollout")
    assert entry["after"]["status"] == "promoted"
    assert entry["after"]["breaches"] == []
    assert {_node_of(client, n) for n in range(700, 720)} == {"edge-v2"}


SLOW = """\
version: rollout-slow
rollouts:
  - task: sentiment
    model: sentiment-small
    candidate: "2"
    guard: {steps: [20, 50, 100], dwell_s: 60, min_requests: 5, max_p99_ratio: 1.0,
            p99_slack_ms: 300}
"""
"""A candidate may be 300 ms slower at p99 than the in-process version, no more."""


def test_a_slow_model_version_is_rolled_back_within_its_first_step(
    client: TestClient, models_dir: Path, tmp_path: Path
) -> None:
    with version_2_node(models_dir, tmp_path, env={"HYBRIDINFER_NODE_TOKEN": NODE_TOKEN}) as (
        url,
        card,
    ):
        slowed = httpx.put(
            f"{url}/admin/faults",
            json={"delay_ms": 1000, "delay_percent": 100},
            headers=auth(NODE_TOKEN),
        )
        assert slowed.status_code == 200, slowed.text
        _register(client, url, card)
        applied = client.post("/v1/policies", json={"policy": SLOW}, headers=auth())
        assert applied.status_code == 201, applied.text
        rollout = _serve_while_running(client)[-1]  # until the candidate is judged
        assert rollout["status"] == "rolled_back", rollout
        assert rollout["percent"] == 0.0
        walk = rollout["walk"]
        assert (walk["status"], walk["step"], walk["percent"]) == ("rolled_back", 0, 20.0)
        assert [b["guard"] for b in walk["state"]["breach"]] == ["p99_latency"]
        assert walk["state"]["steps"][0]["canary"]["p99_ms"] >= 1000.0
        (entry,) = _audit(client, "model.walk.rollback")
        assert (entry["actor"], entry["target"]) == ("canary-walk", "sentiment/sentiment-small:2")
        assert entry["after"]["breached"] == "p99_latency"
        assert {_node_of(client, n) for n in range(400, 420)} == {"local"}


def _serve_while_running(
    client: TestClient, seconds: float = 60.0, most: int = 5000
) -> list[dict[str, Any]]:
    """Requests one at a time while the rollout runs, at most ``most`` or for ``seconds``:
    the rollout as ``/v1/rollouts`` shows it after each. The walk steps on its monitor's
    clock (dwell times), not per request, so a count alone ends too soon on a loaded host."""
    seen = [_rollout(client)]
    deadline = time.monotonic() + seconds
    for n in range(most):
        if seen[-1]["status"] != "running" or time.monotonic() > deadline:
            break
        _node_of(client, n)
        seen.append(_rollout(client))
    return seen


def _rollout(client: TestClient) -> dict[str, Any]:
    rollout: dict[str, Any] = client.get("/v1/rollouts", headers=auth()).json()["rollouts"][0]
    return rollout


def _audit(client: TestClient, action: str | None = None) -> list[dict[str, Any]]:
    query = "?limit=1000" if action is None else f"?action={action}"
    response = client.get(f"/v1/audit{query}", headers=auth())
    entries: list[dict[str, Any]] = response.json()["entries"]
    return entries


def _decided(client: TestClient, timeout_s: float = 15.0) -> dict[str, Any]:
    """The first rollout once it is no longer running (or as it stands after ``timeout_s``)."""
    deadline = time.monotonic() + timeout_s
    rollout: dict[str, Any] = client.get("/v1/rollouts", headers=auth()).json()["rollouts"][0]
    while rollout["status"] == "running" and time.monotonic() < deadline:
        time.sleep(0.2)
        rollout = client.get("/v1/rollouts", headers=auth()).json()["rollouts"][0]
    return rollout
