from __future__ import annotations

from starlette.testclient import TestClient

from hybridinfer.control.plane import ControlPlane
from tests.conftest import auth

GOOD = """\
version: ops-7
rules:
  - name: everything-local
    when: "true"
    action: local
cascade:
  sentiment: {target_cloud_share: 0.2}
"""


def test_policies_are_listed_applied_and_read_back(client: TestClient) -> None:
    listed = client.get("/v1/policies", headers=auth()).json()
    assert listed["active"] == "default-4"
    applied = client.post(
        "/v1/policies", content=GOOD, headers={**auth(), "Content-Type": "application/yaml"}
    )
    assert applied.status_code == 201, applied.text
    assert applied.json()["version"] == "ops-7"
    assert 0.0 < applied.json()["thresholds"]["sentiment"] < 1.0  # from the calibration split
    listed = client.get("/v1/policies", headers=auth()).json()
    assert listed["active"] == "ops-7"
    assert {p["version"]: p["status"] for p in listed["policies"]} == {
        "ops-7": "active",
        "default-4": "retired",
    }
    record = client.get("/v1/policies/ops-7", headers=auth()).json()
    assert record["body"] == GOOD
    response = client.post(
        "/v1/infer", headers=auth(), json={"task": "sentiment", "inputs": {"text": "x"}}
    )
    assert response.json()["subtasks"][0]["reason"].startswith("Rule 'everything-local'")


def test_an_invalid_policy_is_refused_with_its_line_and_the_running_one_stays(
    client: TestClient,
) -> None:
    broken = GOOD.replace('when: "true"', "when: node.local.load >")
    response = client.post("/v1/policies", json={"policy": broken}, headers=auth())
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "invalid_policy"
    assert "policy:4:" in error["message"]
    assert client.get("/v1/policies", headers=auth()).json()["active"] == "default-4"


def test_a_version_is_immutable(client: TestClient) -> None:
    assert client.post("/v1/policies", json={"policy": GOOD}, headers=auth()).status_code == 201
    changed = GOOD.replace("0.2", "0.4")
    response = client.post("/v1/policies", json={"policy": changed}, headers=auth())
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "policy_version_exists"


def test_policies_need_the_admin_scope(client: TestClient, plane: object) -> None:
    key = client.portal.call(plane.keys.create, "app", {"infer"})  # type: ignore[attr-defined,union-attr]
    assert client.get("/v1/policies", headers=auth(key)).status_code == 403
    assert client.post("/v1/policies", json={"policy": GOOD}, headers=auth(key)).status_code == 403


CANARY = GOOD.replace("version: ops-7", "version: ops-8").replace("0.2", "0.25")
YAML = {**auth(), "Content-Type": "application/yaml"}


def _sentiment(client: TestClient, routing_key: str | None = None) -> tuple[str, dict[str, object]]:
    headers = auth() if routing_key is None else {**auth(), "X-Routing-Key": routing_key}
    response = client.post(
        "/v1/infer", headers=headers, json={"task": "sentiment", "inputs": {"text": "fine"}}
    )
    assert response.status_code == 200, response.text
    return response.headers["X-Hybridinfer-Policy"], response.json()


def test_a_staged_version_serves_nothing_until_its_canary(client: TestClient) -> None:
    staged = client.post("/v1/policies?stage=true", content=CANARY, headers=YAML)
    assert staged.status_code == 201
    assert staged.json()["status"] == "staged"
    listed = client.get("/v1/policies", headers=auth()).json()
    assert listed["active"] == "default-4"
    assert listed["canary"] is None
    assert {_sentiment(client)[0] for _ in range(20)} == {"default-4"}


def test_canary_steps_promote_and_the_audit_log(client: TestClient, plane: ControlPlane) -> None:
    client.post("/v1/policies?stage=true", content=CANARY, headers=YAML)
    stepped = client.post("/v1/policies/ops-8/canary", headers=auth())
    assert stepped.json() == {"active": "default-4", "canary": {"version": "ops-8", "percent": 5}}
    moved = client.post("/v1/policies/ops-8/canary", json={"percent": 50}, headers=auth())
    assert moved.json()["canary"] == {"version": "ops-8", "percent": 50}
    versions = [_sentiment(client)[0] for _ in range(200)]
    assert 60 < versions.count("ops-8") < 140  # 50 % of request ids, hashed
    version, body = _sentiment(client, routing_key="user-42")
    assert all(_sentiment(client, routing_key="user-42")[0] == version for _ in range(10))
    client.portal.call(plane.traces.flush)  # type: ignore[union-attr]
    trace = client.get(f"/v1/traces/{body['request_id']}", headers=auth())
    assert trace.json()["policy_version"] == version
    assert trace.json()["decisions"][0]["policy_version"] == version
    promoted = client.post("/v1/policies/ops-8/promote", headers=auth())
    assert promoted.json() == {"active": "ops-8", "canary": None}
    assert {_sentiment(client)[0] for _ in range(20)} == {"ops-8"}
    entries = client.get("/v1/audit?limit=10", headers=auth()).json()["entries"]
    actions = [(e["action"], e["target"]) for e in entries]
    assert actions[:4] == [
        ("policy.promote", "ops-8"),
        ("policy.canary", "ops-8"),
        ("policy.canary", "ops-8"),
        ("policy.stage", "ops-8"),
    ]
    assert entries[0]["before"]["canary"] == {"version": "ops-8", "percent": 50}
    assert entries[0]["after"] == {"active": "ops-8", "canary": None}
    assert entries[0]["actor"] != "system"


def test_rollback_of_a_canary_and_of_a_promotion(client: TestClient) -> None:
    client.post("/v1/policies?stage=true", content=CANARY, headers=YAML)
    client.post("/v1/policies/ops-8/canary", json={"percent": 100}, headers=auth())
    assert {_sentiment(client)[0] for _ in range(10)} == {"ops-8"}
    rolled = client.post("/v1/policies/ops-8/rollback", headers=auth())
    assert rolled.json() == {"active": "default-4", "canary": None}
    assert {_sentiment(client)[0] for _ in range(10)} == {"default-4"}
    client.post("/v1/policies/ops-8/canary", json={"percent": 20}, headers=auth())
    client.post("/v1/policies/ops-8/promote", headers=auth())
    restored = client.post("/v1/policies/ops-8/rollback", headers=auth())
    assert restored.json() == {"active": "default-4", "canary": None}
    entry = client.get("/v1/audit?action=policy.rollback", headers=auth()).json()["entries"][0]
    assert (entry["before"]["active"], entry["after"]["active"]) == ("ops-8", "default-4")


def test_invalid_transitions_answer_409_with_the_reason(client: TestClient) -> None:
    client.post("/v1/policies?stage=true", content=CANARY, headers=YAML)
    promote = client.post("/v1/policies/ops-8/promote", headers=auth())
    assert promote.status_code == 409
    assert promote.json()["error"]["code"] == "invalid_transition"
    assert "start a canary" in promote.json()["error"]["message"]
    assert client.post("/v1/policies/default-4/canary", headers=auth()).status_code == 409
    assert client.post("/v1/policies/nope/canary", headers=auth()).status_code == 404
    bad = client.post("/v1/policies/ops-8/canary", json={"percent": 150}, headers=auth())
    assert bad.status_code == 400
    text = client.post("/v1/policies/ops-8/canary", json={"percent": "ten"}, headers=auth())
    assert text.status_code == 400


def test_diff_of_two_versions(client: TestClient) -> None:
    client.post("/v1/policies?stage=true", content=CANARY, headers=YAML)
    diff = client.get("/v1/policies/default-4/diff/ops-8", headers=auth()).json()
    assert diff["from"] == "default-4"
    assert diff["to"] == "ops-8"
    assert "--- default-4\n+++ ops-8\n" in diff["diff"]
    assert "-version: default-4\n" in diff["diff"]
    assert "+version: ops-8\n" in diff["diff"]
    against = client.get("/v1/policies/ops-8?against=default-4", headers=auth()).json()
    assert against["diff"] == diff["diff"]
    same = client.get("/v1/policies/ops-8/diff/ops-8", headers=auth()).json()
    assert same["diff"] == ""
    missing = client.get("/v1/policies/ops-8/diff/nope", headers=auth())
    assert missing.status_code == 404
