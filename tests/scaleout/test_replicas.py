"""Acceptance: three gateway processes on one PostgreSQL, Redis and NATS JetStream."""

from __future__ import annotations

import asyncio
import time

import httpx
import orjson
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from tests.conftest import ADMIN_KEY, auth
from tests.scaleout.conftest import Gateway, Launch, metric

pytestmark = pytest.mark.integration

SENTIMENT = {"task": "sentiment", "inputs": {"text": "I love this"}}


def wait_for_fresh_minute(margin_s: float = 15.0) -> None:
    """Rate limits use one-minute windows: start a burst well inside one."""
    if time.time() % 60 > 60 - margin_s:
        time.sleep(60 - time.time() % 60 + 0.2)


def test_a_global_rate_limit_holds_across_three_replicas(cluster: Launch) -> None:
    limit = 30
    gateways = cluster(3, rate_limit_per_minute=limit)
    wait_for_fresh_minute()
    statuses: list[int] = []
    clients = [gateway.client() for gateway in gateways]
    try:
        for index in range(3 * limit):
            statuses.append(clients[index % 3].post("/v1/infer", json=SENTIMENT).status_code)
    finally:
        for client in clients:
            client.close()
    assert set(statuses) == {200, 429}
    assert limit <= statuses.count(200) <= limit + 1  # holds within one request
    assert statuses[:limit] == [200] * limit


def test_a_policy_applied_on_one_replica_is_live_on_the_other_within_2s(
    cluster: Launch,
) -> None:
    first, second = cluster(2)
    with first.client() as client:
        listing = client.get("/v1/policies")
        assert listing.status_code == 200, listing.text
        body = listing.json()
    current = next(p for p in body["policies"] if p["status"] == "active")["version"]
    with second.client() as client:
        policy_text = client.get(f"/v1/policies/{current}").json()["body"]
    new_text = policy_text.replace(f"version: {current}", "version: scaleout-2", 1)
    with first.client() as client:
        applied = client.post(
            "/v1/policies", content=new_text, headers={"Content-Type": "application/yaml"}
        )
        assert applied.status_code in (200, 201), applied.text
    applied_at = time.monotonic()
    with second.client() as client:
        while time.monotonic() - applied_at < 5:
            answer = client.post("/v1/infer", json=SENTIMENT).json()
            trace = client.get(f"/v1/traces/{answer['request_id']}").json()
            if trace["decisions"][0]["policy_version"] == "scaleout-2":
                break
            time.sleep(0.05)
    assert time.monotonic() - applied_at < 2.0


async def submit_all(gateways: list[Gateway], count: int) -> list[str]:
    limits = httpx.Limits(max_connections=16)
    async with httpx.AsyncClient(headers=auth(ADMIN_KEY), timeout=30, limits=limits) as client:
        semaphore = asyncio.Semaphore(16)

        async def one(index: int) -> str:
            async with semaphore:
                response = await client.post(
                    gateways[index % len(gateways)].url + "/v1/tasks",
                    json={"task": "sentiment", "inputs": {"text": f"task number {index}"}},
                    headers={"Idempotency-Key": f"acceptance-{index}"},
                )
            assert response.status_code == 202, response.text
            return str(response.json()["task_id"])

        return await asyncio.gather(*(one(index) for index in range(count)))


async def task_rows(store_url: str) -> list[dict[str, object]]:
    engine = create_async_engine(store_url)
    try:
        async with engine.connect() as connection:
            rows = await connection.execute(text("SELECT id, status, result, attempts FROM tasks"))
            return [dict(row._mapping) for row in rows]
    finally:
        await engine.dispose()


def test_500_tasks_complete_once_each_with_a_replica_killed_mid_run(
    cluster: Launch, postgres_url: str
) -> None:
    gateways = cluster(3, task_ack_wait_s=3.0, task_workers=4, rate_limit_per_minute=100_000)
    task_ids = asyncio.run(submit_all(gateways, 500))
    assert len(set(task_ids)) == 500
    started = time.monotonic()
    while metric(gateways[2], 'hybridinfer_tasks_total{outcome="completed"}') < 20:
        assert time.monotonic() - started < 60, "the victim replica never ran a task"
        time.sleep(0.05)
    gateways[2].kill()  # SIGKILL mid-run: its in-flight tasks are never acknowledged
    survivors = gateways[:2]
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        rows = asyncio.run(task_rows(postgres_url))
        if sum(row["status"] == "done" for row in rows) == 500:
            break
        time.sleep(1.0)
    rows = asyncio.run(task_rows(postgres_url))
    assert {row["id"] for row in rows} == set(task_ids)
    assert [row["status"] for row in rows].count("done") == 500
    for row in rows:
        result = orjson.loads(str(row["result"]))
        assert result["request_id"] == row["id"]
        assert result["outputs"]["label"] in ("positive", "negative", "neutral")
    survivor_counts = sum(
        metric(gateway, 'hybridinfer_tasks_total{outcome="completed"}') for gateway in survivors
    )
    assert survivor_counts <= 500
    with survivors[0].client() as client:
        sample = client.get(f"/v1/tasks/{task_ids[0]}").json()
    assert sample["status"] == "done"
    assert sample["result"]["status"] == "ok"
