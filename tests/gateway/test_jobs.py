"""Async tasks through the gateway (in-process queue, SQLite): submit, poll, idempotency."""

from __future__ import annotations

import time
from typing import Any

from starlette.testclient import TestClient

from hybridinfer.control.plane import ControlPlane
from tests.conftest import auth

SENTIMENT = {"task": "sentiment", "inputs": {"text": "I love this"}}


def wait_done(client: TestClient, task_id: str, timeout_s: float = 20.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        body: dict[str, Any] = client.get(f"/v1/tasks/{task_id}", headers=auth()).json()
        if body["status"] in ("done", "failed"):
            return body
        time.sleep(0.05)
    raise AssertionError(f"task {task_id} not finished in {timeout_s} s")


def test_a_task_runs_through_the_same_pipeline(client: TestClient) -> None:
    submitted = client.post("/v1/tasks", json=SENTIMENT, headers=auth())
    assert submitted.status_code == 202, submitted.text
    task_id = submitted.json()["task_id"]
    done = wait_done(client, task_id)
    assert done["status"] == "done"
    assert done["result"]["outputs"]["label"] == "positive"
    assert done["result"]["subtasks"][0]["tier"] == "local"
    assert done["result"]["request_id"] == task_id
    trace = client.get(f"/v1/traces/{task_id}", headers=auth())
    assert trace.status_code == 200


def test_an_idempotency_key_returns_the_same_task(client: TestClient) -> None:
    headers = {**auth(), "Idempotency-Key": "order-42"}
    first = client.post("/v1/tasks", json=SENTIMENT, headers=headers).json()["task_id"]
    again = client.post("/v1/tasks", json=SENTIMENT, headers=headers).json()["task_id"]
    assert first == again
    other = {**SENTIMENT, "inputs": {"text": "something else"}}
    reused = client.post("/v1/tasks", json=other, headers=headers)
    assert reused.status_code == 409
    assert reused.json()["error"]["code"] == "idempotency_key_reused"
    assert wait_done(client, first)["status"] == "done"


def test_bad_submissions_fail_at_once(client: TestClient) -> None:
    unknown = client.post("/v1/tasks", json={"task": "nope"}, headers=auth())
    assert unknown.status_code == 404
    invalid = client.post("/v1/tasks", json={"task": 3}, headers=auth())
    assert invalid.status_code == 422
    missing = client.get("/v1/tasks/does-not-exist", headers=auth())
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "unknown_task_id"
    assert client.post("/v1/tasks", json=SENTIMENT).status_code == 401


def test_metrics_count_trace_writes_and_tasks(client: TestClient, plane: ControlPlane) -> None:
    task_id = client.post("/v1/tasks", json=SENTIMENT, headers=auth()).json()["task_id"]
    wait_done(client, task_id)
    text = client.get("/metrics", headers=auth()).text
    assert "hybridinfer_trace_writes_dropped_total 0" in text
    assert 'hybridinfer_tasks_total{outcome="completed"} 1' in text
    assert "hybridinfer_task_queue_depth 0" in text


def test_an_auto_task_is_planned_at_submit_and_run_by_the_worker(client: TestClient) -> None:
    submitted = client.post(
        "/v1/tasks", json={"task": "auto", "inputs": {"text": "I love this"}}, headers=auth()
    )
    assert submitted.status_code == 202, submitted.text
    done = wait_done(client, submitted.json()["task_id"])
    assert done["result"]["task"] == "sentiment"
    assert done["result"]["outputs"]["label"] == "positive"
    empty = client.post("/v1/tasks", json={"task": "auto", "inputs": {}}, headers=auth())
    assert empty.status_code == 400
