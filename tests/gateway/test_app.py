from __future__ import annotations

import time

import pytest
from starlette.testclient import TestClient

from hybridinfer.control.plane import ControlPlane
from hybridinfer.gateway.app import create_app
from hybridinfer.settings import Settings
from tests.conftest import NODE_TOKEN, auth

DIGIT_ZERO = [
    0,
    0,
    5,
    13,
    9,
    1,
    0,
    0,
    0,
    0,
    13,
    15,
    10,
    15,
    5,
    0,
    0,
    3,
    15,
    2,
    0,
    11,
    8,
    0,
    0,
    4,
    12,
    0,
    0,
    8,
    8,
    0,
    0,
    5,
    8,
    0,
    0,
    9,
    8,
    0,
    0,
    4,
    11,
    0,
    1,
    12,
    7,
    0,
    0,
    2,
    14,
    5,
    10,
    12,
    0,
    0,
    0,
    0,
    6,
    13,
    10,
    0,
    0,
    0,
]  # sklearn's digits[0]


def assert_envelope(response: object, status: int, code: str) -> dict[str, object]:
    assert response.status_code == status, response.text  # type: ignore[attr-defined]
    body = response.json()  # type: ignore[attr-defined]
    error = body["error"]
    assert error["code"] == code
    assert error["message"]
    assert error["request_id"] == response.headers["x-request-id"]  # type: ignore[attr-defined]
    return dict(error)


def register_dead_cloud(client: TestClient) -> None:
    """A public cloud node whose address answers nothing (port 9 on loopback)."""
    response = client.post(
        "/v1/nodes",
        headers=auth(NODE_TOKEN),
        json={
            "id": "cloud-dead",
            "tier": "cloud",
            "zone": "public",
            "url": "http://127.0.0.1:9",
            "deployments": [
                {
                    "model": "sentiment-large",
                    "version": "1",
                    "capability": "text-classification",
                    "task": "sentiment",
                    "quality": 0.99,
                    "latency_ms": 5.0,
                    "labels": ["negative", "neutral", "positive"],
                    "inputs": [{"name": "text", "datatype": "BYTES", "shape": [-1, 1]}],
                    "outputs": [{"name": "probabilities", "datatype": "FP32", "shape": [-1, 3]}],
                    "cost_per_call": 0.001,
                }
            ],
        },
    )
    assert response.status_code == 201, response.text


def test_health_probes_need_no_key_and_carry_a_request_id(client: TestClient) -> None:
    live = client.get("/healthz")
    assert live.status_code == 200
    assert len(live.headers["x-request-id"]) == 32
    deadline = time.monotonic() + 60  # readiness waits for the name model to load
    ready = client.get("/readyz")
    while ready.status_code == 503 and time.monotonic() < deadline:
        assert ready.json()["error"]["code"] == "not_ready"
        time.sleep(0.2)
        ready = client.get("/readyz")
    assert ready.json() == {"status": "ready"}


def test_request_id_is_echoed(client: TestClient) -> None:
    response = client.get("/healthz", headers={"X-Request-ID": "caller-id-42"})
    assert response.headers["x-request-id"] == "caller-id-42"
    weird = client.get("/healthz", headers={"X-Request-ID": "bad id\twith spaces"})
    assert weird.headers["x-request-id"] != "bad id\twith spaces"


def test_sentiment_runs_on_the_local_tier(client: TestClient) -> None:
    response = client.post(
        "/v1/infer", headers=auth(), json={"task": "sentiment", "inputs": {"text": "I love this"}}
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "ok"
    assert body["request_id"] == response.headers["x-request-id"]
    assert body["outputs"]["label"] in {"negative", "neutral", "positive"}
    assert 0.0 < body["outputs"]["confidence"] <= 1.0
    [subtask] = body["subtasks"]
    assert subtask["tier"] == "local"
    assert subtask["node"] == "local"
    assert subtask["model"] == "sentiment-small"
    assert subtask["reason"]
    assert set(body["timings_ms"]) == {
        "gateway",
        "decompose",
        "route",
        "execute",
        "aggregate",
        "total",
    }


def test_digits_recognises_a_zero_locally(client: TestClient) -> None:
    response = client.post(
        "/v1/infer", headers=auth(), json={"task": "digits", "inputs": {"pixels": DIGIT_ZERO}}
    )
    assert response.status_code == 200, response.text
    assert response.json()["outputs"]["label"] == "0"


def test_missing_and_unknown_keys_are_401(client: TestClient) -> None:
    body = {"task": "sentiment", "inputs": {"text": "x"}}
    assert_envelope(client.post("/v1/infer", json=body), 401, "unauthorized")
    assert_envelope(client.post("/v1/infer", json=body, headers=auth("nope")), 401, "unauthorized")
    basic = client.post("/v1/infer", json=body, headers={"Authorization": "Basic abc"})
    assert_envelope(basic, 401, "unauthorized")


@pytest.mark.parametrize(
    ("content", "status", "code"),
    [
        (b"{not json", 400, "invalid_json"),
        (b"\xff\xfe", 400, "invalid_encoding"),
        (b"[1, 2]", 422, "invalid_schema"),
        (b'{"inputs": {}}', 422, "invalid_schema"),
        (
            b'{"task": "sentiment", "inputs": {"text": "x"}, "options": {"route": "moon"}}',
            422,
            "invalid_schema",
        ),
        (b'{"task": "astrology", "inputs": {}}', 404, "unknown_task"),
        (b'{"task": "sentiment", "inputs": {"text": 3}}', 400, "invalid_input"),
        (b'{"task": "digits", "inputs": {"pixels": [1, 2]}}', 400, "invalid_input"),
    ],
)
def test_bad_requests_get_the_right_status_and_code(
    client: TestClient, content: bytes, status: int, code: str
) -> None:
    response = client.post(
        "/v1/infer", content=content, headers={**auth(), "Content-Type": "application/json"}
    )
    assert_envelope(response, status, code)


def test_body_over_the_limit_is_413(settings: Settings) -> None:
    small = settings.model_copy(update={"max_body_bytes": 100})
    with TestClient(create_app(ControlPlane(small))) as client:
        text = "x" * 200
        response = client.post(
            "/v1/infer", headers=auth(), json={"task": "sentiment", "inputs": {"text": text}}
        )
        assert_envelope(response, 413, "payload_too_large")


def test_unknown_route_and_wrong_method_use_the_envelope(client: TestClient) -> None:
    assert_envelope(client.get("/v1/nowhere", headers=auth()), 404, "not_found")
    assert_envelope(client.get("/v1/infer", headers=auth()), 405, "method_not_allowed")


def test_trace_holds_plan_decision_attempts_and_stage_timings(client: TestClient) -> None:
    response = client.post(
        "/v1/infer", headers=auth(), json={"task": "sentiment", "inputs": {"text": "meh"}}
    )
    request_id = response.json()["request_id"]
    trace = client.get(f"/v1/traces/{request_id}", headers=auth()).json()
    assert trace["request_id"] == request_id
    assert trace["plan"]["subtasks"][0]["capability"] == "text-classification"
    [decision] = trace["decisions"]
    assert decision["policy_version"] == "default-4"
    assert decision["reason"]
    assert decision["candidates"][0]["deployment"] == "local/sentiment-small:1"
    assert trace["attempts"][0]["status"] == "ok"
    for stage in ("gateway", "decompose", "route", "execute", "aggregate"):
        assert trace["timings_ms"][stage] >= 0.0
    assert trace["timings_ms"]["execute"] > 0.0
    missing = client.get("/v1/traces/never-seen", headers=auth())
    assert_envelope(missing, 404, "unknown_trace")


def test_sensitive_data_forced_to_the_cloud_is_refused(client: TestClient) -> None:
    register_dead_cloud(client)
    response = client.post(
        "/v1/infer",
        headers=auth(),
        json={
            "task": "sentiment",
            "inputs": {"text": "my card is 4111 1111 1111 1111"},
            "options": {"privacy": "sensitive", "route": "cloud"},
        },
    )
    assert_envelope(response, 403, "privacy_violation")
    trace = client.get(f"/v1/traces/{response.headers['x-request-id']}", headers=auth()).json()
    assert trace["attempts"] == []
    assert trace["error"]["code"] == "privacy_violation"


def test_failed_cloud_falls_back_to_local_and_the_trace_shows_both(client: TestClient) -> None:
    register_dead_cloud(client)
    # No placement rules: prefer=quality alone picks the (dead) cloud node first.
    applied = client.post("/v1/policies", json={"policy": "version: plain-1\n"}, headers=auth())
    assert applied.status_code == 201
    response = client.post(
        "/v1/infer",
        headers=auth(),
        # No hedge (sentiment is latency-sensitive, so hedged by default): a hedge to the
        # local tier could win before the retry, and this is the retry-then-fallback path.
        json={
            "task": "sentiment",
            "inputs": {"text": "fine"},
            "options": {"prefer": "quality", "hedge": False},
        },
    )
    assert response.status_code == 200, response.text
    assert response.json()["subtasks"][0]["tier"] == "local"
    trace = client.get(f"/v1/traces/{response.json()['request_id']}", headers=auth()).json()
    # A refused connection is retried once (retry_attempts: 2), then the chain falls back.
    assert [(a["node"], a["number"], a["status"]) for a in trace["attempts"]] == [
        ("cloud-dead", 1, "error"),
        ("cloud-dead", 2, "error"),
        ("local", 1, "ok"),
    ]
    assert trace["attempts"][0]["error_code"] == "upstream_unavailable"


def test_forced_to_a_dead_cloud_is_a_502(client: TestClient) -> None:
    register_dead_cloud(client)
    response = client.post(
        "/v1/infer",
        headers=auth(),
        json={"task": "sentiment", "inputs": {"text": "fine"}, "options": {"route": "cloud"}},
    )
    assert_envelope(response, 502, "upstream_unavailable")


def test_forced_to_a_tier_with_no_node_is_a_503(client: TestClient) -> None:
    response = client.post(
        "/v1/infer",
        headers=auth(),
        json={"task": "sentiment", "inputs": {"text": "fine"}, "options": {"route": "edge"}},
    )
    assert_envelope(response, 503, "no_capacity")


def test_scopes_are_enforced(client: TestClient, plane: ControlPlane) -> None:
    infer_key = client.portal.call(plane.keys.create, "app", {"infer"})  # type: ignore[union-attr]
    assert_envelope(client.get("/v1/nodes", headers=auth(infer_key)), 403, "forbidden")
    registration = client.post("/v1/nodes", headers=auth(infer_key), json={})
    assert_envelope(registration, 403, "forbidden")
    ok = client.post(
        "/v1/infer", headers=auth(infer_key), json={"task": "sentiment", "inputs": {"text": "a"}}
    )
    assert ok.status_code == 200
    # an infer key reads only its own traces
    admin_request = client.post(
        "/v1/infer", headers=auth(), json={"task": "sentiment", "inputs": {"text": "b"}}
    )
    other = client.get(f"/v1/traces/{admin_request.json()['request_id']}", headers=auth(infer_key))
    assert_envelope(other, 404, "unknown_trace")
    own = client.get(f"/v1/traces/{ok.json()['request_id']}", headers=auth(infer_key))
    assert own.status_code == 200


def test_revoked_keys_are_refused(client: TestClient, plane: ControlPlane) -> None:
    from hybridinfer.control.keys import key_id_of

    key = client.portal.call(plane.keys.create, "temp", {"infer"})  # type: ignore[union-attr]
    body = {"task": "sentiment", "inputs": {"text": "a"}}
    assert client.post("/v1/infer", headers=auth(key), json=body).status_code == 200
    client.portal.call(plane.keys.revoke, key_id_of(key))  # type: ignore[union-attr]
    assert_envelope(client.post("/v1/infer", headers=auth(key), json=body), 401, "unauthorized")


def test_rate_limit_answers_429_with_retry_after(settings: Settings) -> None:
    limited = settings.model_copy(update={"rate_limit_per_minute": 3})
    with TestClient(create_app(ControlPlane(limited))) as client:
        for _ in range(3):
            assert client.get("/v1/traces?limit=1", headers=auth()).status_code == 200
        response = client.get("/v1/traces?limit=1", headers=auth())
        assert_envelope(response, 429, "rate_limited")
        assert 1 <= int(response.headers["retry-after"]) <= 60


def test_nodes_list_shows_tiers_and_deployments(client: TestClient) -> None:
    register_dead_cloud(client)
    nodes = {n["id"]: n for n in client.get("/v1/nodes", headers=auth()).json()["nodes"]}
    assert nodes["local"]["tier"] == "local"
    assert nodes["cloud-dead"]["zone"] == "public"
    assert nodes["cloud-dead"]["deployments"][0]["cost_per_call"] == 0.001


def test_node_registration_needs_the_node_token(client: TestClient) -> None:
    response = client.post("/v1/nodes", headers=auth("wrong-token"), json={})
    assert_envelope(response, 401, "unauthorized")
    beat = client.post("/v1/nodes/ghost/heartbeat", headers=auth(NODE_TOKEN), json={"load": 0.1})
    assert_envelope(beat, 404, "unknown_node")


def test_generated_admin_key_is_handed_over_once(settings: Settings) -> None:
    no_bootstrap = settings.model_copy(update={"bootstrap_key": None})
    seen: list[str | None] = []
    with TestClient(create_app(ControlPlane(no_bootstrap), on_start=seen.append)) as client:
        key = seen[0]
        assert key is not None
        assert client.get("/v1/nodes", headers=auth(key)).status_code == 200
    with TestClient(create_app(ControlPlane(no_bootstrap), on_start=seen.append)):
        assert seen[1] is None  # the admin key exists now: nothing new to print
