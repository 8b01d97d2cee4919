"""``GET /metrics``: request counters, stage histograms and plane state in Prometheus text."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

from tests.conftest import auth

SENTIMENT = {"task": "sentiment", "inputs": {"text": "I love this"}}


def samples(client: TestClient) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = client.get("/metrics", headers=auth())
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def test_a_request_is_counted_by_task_tier_status_and_timed_per_stage(
    client: TestClient,
) -> None:
    for _ in range(3):
        assert client.post("/v1/infer", json=SENTIMENT, headers=auth()).status_code == 200
    values = samples(client)
    key = (("status", "ok"), ("task", "sentiment"), ("tier", "local"))
    assert values[("hybridinfer_requests_total", key)] == 3
    assert values[("hybridinfer_subtasks_total", (("tier", "local"),))] == 3
    assert (
        values[
            ("hybridinfer_attempts_total", (("node", "local"), ("status", "ok"), ("tier", "local")))
        ]
        == 3
    )
    for stage in ("gateway", "decompose", "route", "execute", "aggregate"):
        assert values[("hybridinfer_stage_seconds_count", (("stage", stage),))] == 3
    assert values[("hybridinfer_node_up", (("node", "local"),))] == 1
    assert ("hybridinfer_node_load", (("node", "local"), ("tier", "local"))) in values
    assert values[("hybridinfer_spend_total", ())] == 0
    assert values[("hybridinfer_task_queue_depth", ())] == 0
    assert values[("hybridinfer_trace_writes_dropped_total", ())] == 0
    assert any(name == "hybridinfer_breaker_open" for name, _ in values)


def test_a_failed_request_is_counted_as_an_error(client: TestClient) -> None:
    body = {"task": "sentiment", "inputs": {"text": "x"}, "options": {"route": "cloud"}}
    assert client.post("/v1/infer", json=body, headers=auth()).status_code >= 400
    values = samples(client)
    key = (("status", "error"), ("task", "sentiment"), ("tier", "none"))
    assert values[("hybridinfer_requests_total", key)] == 1


def test_metrics_need_the_admin_key(client: TestClient) -> None:
    assert client.get("/metrics").status_code == 401
