"""Answer reuse through the gateway in process (real local models, SQLite, memory stores):
headers, Cache-Control, the trace, the admin routes, metrics and the dashboard's summary."""

from __future__ import annotations

import httpx
import pytest
from starlette.testclient import TestClient

from hybridinfer.control.keys import key_id_of
from hybridinfer.settings import Settings
from tests.conftest import ADMIN_KEY, auth

CACHE = "X-Hybridinfer-Cache"


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """The shared settings with the answer cache as by default (the suite turns it off)."""
    return settings.model_copy(update={"answer_cache": "auto"})


def sentiment(
    client: TestClient, text: str, headers: dict[str, str] | None = None, **options: object
) -> httpx.Response:
    body = {"task": "sentiment", "inputs": {"text": text}, "options": {"hedge": False, **options}}
    response = client.post("/v1/infer", json=body, headers={**auth(), **(headers or {})})
    assert response.status_code == 200, response.text
    return response


def test_a_repeat_is_a_hit_whose_trace_names_the_first_request(client: TestClient) -> None:
    first = sentiment(client, "the soup was wonderful")
    assert first.headers[CACHE] == "miss"
    second = sentiment(client, "  the soup was wonderful ")  # canonical: stripped
    assert second.headers[CACHE] == "hit"
    assert second.json()["outputs"] == first.json()["outputs"]
    reused = second.json()["subtasks"][0]["reused"]
    assert reused["request_id"] == first.json()["request_id"]
    assert reused["kind"] == "hit"
    trace = client.get(f"/v1/traces/{second.json()['request_id']}", headers=auth()).json()
    assert trace["plan"]["reused"]["classify"]["request_id"] == first.json()["request_id"]
    assert trace["attempts"] == []


def test_cache_control_and_the_request_option(client: TestClient) -> None:
    text = "the train was late again"
    assert sentiment(client, text, {"Cache-Control": "no-store"}).headers[CACHE] == "miss"
    assert sentiment(client, text, {"Cache-Control": "no-store"}).headers[CACHE] == "miss"
    assert sentiment(client, text, {"Cache-Control": "no-cache"}).headers[CACHE] == "miss"
    assert sentiment(client, text).headers[CACHE] == "hit"  # the no-cache answer was kept
    assert sentiment(client, text, cache="off").headers[CACHE] == "miss"
    assert sentiment(client, text, cache="refresh").headers[CACHE] == "miss"
    bad = client.post(
        "/v1/infer",
        json={"task": "sentiment", "inputs": {"text": text}, "options": {"cache_scope": "a/b"}},
        headers=auth(),
    )
    assert bad.status_code == 422


def test_admin_flush_counts_metrics_and_the_dashboard(client: TestClient) -> None:
    text = "what a lovely morning"
    sentiment(client, text)
    assert sentiment(client, text).headers[CACHE] == "hit"
    created = client.post("/v1/keys", json={"name": "reader", "scopes": ["infer"]}, headers=auth())
    reader = created.json()
    admin_id = key_id_of(ADMIN_KEY)
    refused = client.post(
        "/v1/answers/flush", json={"tenant": admin_id}, headers=auth(reader["key"])
    )
    assert refused.status_code == 403
    flushed = client.post("/v1/answers/flush", json={"tenant": admin_id}, headers=auth())
    assert flushed.status_code == 200, flushed.text
    assert flushed.json()["removed"] == 1
    assert sentiment(client, text).headers[CACHE] == "miss"
    counts = client.get("/v1/answers", headers=auth()).json()
    assert counts["capabilities"]["text-classification"]["hits"] == 1
    assert counts["capabilities"]["text-classification"]["misses"] == 2
    metrics = client.get("/metrics", headers=auth()).text
    assert (
        'hybridinfer_answer_lookups_total{capability="text-classification",result="hit"} 1.0'
        in metrics
    )
    assert "hybridinfer_answer_saved_spend_total" in metrics
    stats = client.get("/v1/stats", headers=auth()).json()
    assert stats["answers"]["capabilities"]["text-classification"]["hit_ratio"] > 0
    audit = client.get("/v1/audit", headers=auth(), params={"action": "answers.flush"}).json()
    assert audit["entries"][0]["target"] == admin_id
