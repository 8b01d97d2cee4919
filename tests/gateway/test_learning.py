"""Feedback and learner endpoints on the real gateway app (in process, SQLite, onnxruntime):
own requests only, one feedback each, clear 4xx for bad bodies, admin-only learners."""

from __future__ import annotations

from starlette.testclient import TestClient

from tests.conftest import auth

LEARNING_POLICY = """\
version: learn-api-1
learning: {enabled: true, explore: 0.0, min_samples: 3, feedback_window_s: 30}
"""


def infer_key(client: TestClient, name: str) -> str:
    created = client.post("/v1/keys", headers=auth(), json={"name": name, "scopes": ["infer"]})
    assert created.status_code == 201, created.text
    return str(created.json()["key"])


def sentiment(client: TestClient, key: str) -> str:
    response = client.post(
        "/v1/infer", headers=auth(key), json={"task": "sentiment", "inputs": {"text": "fine"}}
    )
    assert response.status_code == 200, response.text
    return str(response.json()["request_id"])


def test_feedback_on_ones_own_request_is_stored_with_its_trace(client: TestClient) -> None:
    applied = client.post("/v1/policies", headers=auth(), json={"policy": LEARNING_POLICY})
    assert applied.status_code == 201, applied.text
    key = infer_key(client, "app")
    request_id = sentiment(client, key)
    given = client.post(
        "/v1/feedback", headers=auth(key), json={"request_id": request_id, "correct": False}
    )
    assert given.status_code == 200, given.text
    assert given.json() == {
        "request_id": request_id,
        "quality": 0.0,
        "teaches_learner": True,
        "window_s": 30.0,
    }
    trace = client.get(f"/v1/traces/{request_id}", headers=auth(key)).json()
    assert trace["feedback"]["quality"] == 0.0
    assert trace["feedback"]["body"] == {"request_id": request_id, "correct": False}
    (decision,) = trace["decisions"]
    assert decision["learning"]["propensity"] == 1.0
    again = client.post(
        "/v1/feedback", headers=auth(key), json={"request_id": request_id, "score": 1}
    )
    assert again.status_code == 409
    assert again.json()["error"]["code"] == "feedback_exists"


def test_another_keys_request_is_unknown_and_bad_bodies_are_4xx(client: TestClient) -> None:
    mine, theirs = infer_key(client, "mine"), infer_key(client, "theirs")
    request_id = sentiment(client, theirs)
    refused = client.post(
        "/v1/feedback", headers=auth(mine), json={"request_id": request_id, "score": 1}
    )
    assert refused.status_code == 404
    assert refused.json()["error"]["code"] == "unknown_trace"
    own = sentiment(client, mine)
    for body, status in [
        ({"request_id": own}, 422),
        ({"request_id": own, "score": 2}, 422),
        ({"request_id": own, "label": "superb"}, 422),
        ({"request_id": own, "score": 1, "weight": 100}, 422),
        ({"score": 1}, 422),
    ]:
        answered = client.post("/v1/feedback", headers=auth(mine), json=body)
        assert answered.status_code == status, (body, answered.text)
    assert client.post("/v1/feedback", headers=auth(mine), content=b"{").status_code == 400
    assert client.post("/v1/feedback", json={"request_id": own, "score": 1}).status_code == 401


def test_learners_are_admin_only_and_a_reset_is_audited(client: TestClient) -> None:
    key = infer_key(client, "app")
    assert client.get("/v1/learners", headers=auth(key)).status_code == 403
    assert (
        client.post("/v1/learners/text-classification/reset", headers=auth(key)).status_code == 403
    )
    listed = client.get("/v1/learners", headers=auth())
    assert listed.status_code == 200
    assert listed.json()["learners"] == {}
    missing = client.get("/v1/learners/text-classification", headers=auth())
    assert missing.status_code == 404
    reset = client.post("/v1/learners/text-classification/reset", headers=auth())
    assert reset.status_code == 200
    assert reset.json()["generation"] == 1
    entries = client.get("/v1/audit", headers=auth(), params={"action": "learner.reset"}).json()
    assert [e["target"] for e in entries["entries"]] == ["text-classification"]
    records = client.get(
        "/v1/learners/text-classification", headers=auth(), params={"records": "1", "limit": "5"}
    )
    assert records.status_code == 200
    assert records.json()["records"] == []
