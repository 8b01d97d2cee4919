"""The replay and walk endpoints over the real app (in-process models): a replay of logged
requests answers a report; a walk starts, shows and aborts; bad input is a clear 4xx."""

from __future__ import annotations

from starlette.testclient import TestClient

from tests.conftest import auth

STAGED = """\
version: ops-9
rules:
  - {name: everything-local, when: "true", action: local}
guard: {steps: [50, 100], dwell_s: 5, min_requests: 3}
"""


def stage(client: TestClient) -> None:
    response = client.post(
        "/v1/policies?stage=true",
        content=STAGED,
        headers={**auth(), "Content-Type": "application/yaml"},
    )
    assert response.status_code == 201, response.text


def test_a_replay_reports_on_the_logged_requests(client: TestClient) -> None:
    for text in ("so good", "awful", "meh"):
        response = client.post(
            "/v1/infer", headers=auth(), json={"task": "sentiment", "inputs": {"text": text}}
        )
        assert response.status_code == 200
    stage(client)
    report = client.post("/v1/policies/ops-9/replay", headers=auth(), json={"traces": 3})
    assert report.status_code == 200, report.text
    body = report.json()
    assert body["traces"] == 3
    assert body["capabilities"]["text-classification"]["decisions"] == 3
    assert body["privacy_violations"] == 0
    assert body["passed"] is True


def test_a_walk_starts_shows_and_aborts(client: TestClient) -> None:
    stage(client)
    started = client.post("/v1/policies/ops-9/walk", headers=auth(), json={"dwell_s": 2})
    assert started.status_code == 201, started.text
    assert started.json()["percent"] == 50.0
    shown = client.get("/v1/policies/ops-9/walk", headers=auth()).json()
    assert shown["settings"]["dwell_s"] == 2.0
    assert client.get("/v1/policies", headers=auth()).json()["canary"]["percent"] == 50.0
    assert client.post("/v1/policies/ops-9/pause", headers=auth()).json()["status"] == "paused"
    aborted = client.post("/v1/policies/ops-9/abort", headers=auth())
    assert aborted.json()["status"] == "aborted"
    assert client.get("/v1/policies", headers=auth()).json()["canary"] is None
    walks = client.get("/v1/rollouts", headers=auth()).json()["policy_walks"]
    assert [w["status"] for w in walks] == ["aborted"]


def test_bad_input_is_a_clear_4xx(client: TestClient) -> None:
    stage(client)
    cases = [
        ("/v1/policies/ops-9/replay", {"traces": 3, "since_s": 60}, 400),
        ("/v1/policies/ops-9/replay", {}, 400),
        ("/v1/policies/ops-9/replay", {"traces": 0}, 400),
        ("/v1/policies/ops-9/replay", {"traces": 1.5}, 400),
        ("/v1/policies/ops-9/replay", {"what": 1}, 400),
        ("/v1/policies/nope/replay", {"traces": 3}, 404),
        ("/v1/policies/ops-9/walk", {"dwell_s": -1}, 400),
        ("/v1/policies/ops-9/walk", {"min_requests": "many"}, 400),
        ("/v1/policies/ops-9/pause", None, 404),
        ("/v1/policies/nope/walk", None, 404),
    ]
    for path, body, status in cases:
        response = client.post(path, headers=auth(), json=body)
        assert response.status_code == status, (path, body, response.text)
        assert "error" in response.json()
