"""The key admin API: create, list, rotate, revoke — audited; node and client keys apart."""

from __future__ import annotations

from starlette.testclient import TestClient

from hybridinfer.control.plane import ControlPlane
from hybridinfer.gateway.app import create_app
from hybridinfer.settings import Settings
from tests.conftest import ADMIN_KEY, NODE_TOKEN, auth
from tests.gateway.test_app import register_dead_cloud

BODY = {"task": "sentiment", "inputs": {"text": "fine"}}


def test_keys_are_created_listed_rotated_and_revoked_with_an_audit_trail(
    client: TestClient,
) -> None:
    created = client.post("/v1/keys", headers=auth(), json={"name": "app", "scopes": ["infer"]})
    assert created.status_code == 201
    key, key_id = created.json()["key"], created.json()["id"]
    assert client.post("/v1/infer", headers=auth(key), json=BODY).status_code == 200

    listed = client.get("/v1/keys", headers=auth()).json()["keys"]
    assert key_id in [k["id"] for k in listed]
    assert all("hash" not in k and "key" not in k for k in listed)

    rotated = client.post(f"/v1/keys/{key_id}/rotate", headers=auth(), json={"grace_s": 3600})
    assert rotated.status_code == 201
    new_key = rotated.json()["key"]
    assert client.post("/v1/infer", headers=auth(new_key), json=BODY).status_code == 200
    assert client.post("/v1/infer", headers=auth(key), json=BODY).status_code == 200  # grace

    revoked = client.post(f"/v1/keys/{key_id}/revoke", headers=auth())
    assert revoked.status_code == 200
    assert revoked.json()["revoked_at"] is not None
    assert client.post("/v1/infer", headers=auth(key), json=BODY).status_code == 401

    entries = client.get("/v1/audit?limit=10", headers=auth()).json()["entries"]
    actions = [(e["action"], e["target"]) for e in entries]
    assert ("key.create", key_id) in actions
    assert ("key.rotate", key_id) in actions
    assert ("key.revoke", key_id) in actions
    rotate = next(e for e in entries if e["action"] == "key.rotate")
    assert rotate["before"]["expires_at"] is None
    assert rotate["after"]["expires_at"] is not None
    assert all(e["actor"] != "" for e in entries)
    text = str(entries)
    assert key not in text
    assert new_key not in text


def test_rotation_with_no_grace_refuses_the_old_key_at_once(client: TestClient) -> None:
    created = client.post("/v1/keys", headers=auth(), json={"name": "ci"}).json()
    client.post(f"/v1/keys/{created['id']}/rotate", headers=auth(), json={"grace_s": 0})
    assert client.post("/v1/infer", headers=auth(created["key"]), json=BODY).status_code == 401


def test_a_client_key_cannot_register_a_node_and_a_node_token_cannot_infer(
    client: TestClient,
) -> None:
    admin_registers = client.post("/v1/nodes", headers=auth(ADMIN_KEY), json={})
    assert admin_registers.status_code == 403
    node_infers = client.post("/v1/infer", headers=auth(NODE_TOKEN), json=BODY)
    assert node_infers.status_code == 403
    node_key = client.post(
        "/v1/keys", headers=auth(), json={"name": "edge-7", "scopes": ["node"]}
    ).json()["key"]
    assert client.post("/v1/infer", headers=auth(node_key), json=BODY).status_code == 403
    mixed = client.post("/v1/keys", headers=auth(), json={"name": "x", "scopes": ["node", "admin"]})
    assert mixed.status_code == 400


def test_a_keys_own_rate_limit_is_enforced(settings: Settings) -> None:
    with TestClient(create_app(ControlPlane(settings))) as client:
        slow = client.post(
            "/v1/keys", headers=auth(), json={"name": "slow", "rate_limit_per_minute": 2}
        ).json()["key"]
        statuses = [
            client.post("/v1/infer", headers=auth(slow), json=BODY).status_code for _ in range(3)
        ]
        assert statuses == [200, 200, 429]
        # other keys keep the gateway's default
        assert client.post("/v1/infer", headers=auth(), json=BODY).status_code == 200


def test_unknown_keys_and_bad_bodies_are_refused(client: TestClient) -> None:
    assert client.post("/v1/keys/nope/rotate", headers=auth()).status_code == 404
    assert client.post("/v1/keys/nope/revoke", headers=auth()).status_code == 404
    bad = client.post("/v1/keys", headers=auth(), json={"name": "", "scopes": []})
    assert bad.status_code == 422


def test_a_keys_own_budget_steers_the_router(client: TestClient) -> None:
    register_dead_cloud(client)  # a paid cloud deployment: 0.001 per call
    small = client.post("/v1/keys", headers=auth(), json={"name": "b", "budget": 0.0001}).json()
    verdicts = {}
    for key in (small["key"], ADMIN_KEY):
        body = BODY | {"options": {"prefer": "quality"}}
        answer = client.post("/v1/infer", headers=auth(key), json=body)
        trace = client.get(f"/v1/traces/{answer.json()['request_id']}", headers=auth()).json()
        candidates = trace["decisions"][0]["candidates"]
        cloud = next(c for c in candidates if c["deployment"].startswith("cloud-dead/"))
        verdicts[key] = cloud.get("rejected_by")
    assert verdicts[small["key"]] == "budget"  # its own budget leaves no room for one call
    assert verdicts[ADMIN_KEY] is None  # no budget of its own, none in the policy
