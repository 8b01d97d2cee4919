from __future__ import annotations

from starlette.testclient import TestClient

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
    assert listed["active"] == "default-3"
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
        "default-3": "retired",
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
    assert client.get("/v1/policies", headers=auth()).json()["active"] == "default-3"


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
