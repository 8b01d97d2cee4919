"""Acceptance: the shared services go away and come back; the gateways ride it out.

These stop the machine's PostgreSQL or Redis for a while and always start them again in a
``finally`` (the start commands are those of the machine's service page)."""

from __future__ import annotations

import time

import httpx
import pytest

from tests.scaleout.conftest import (
    PG_CLUSTER,
    REDIS_START,
    Launch,
    metric,
    postgres_version,
    run_shell,
)
from tests.services import POSTGRES_URL, REDIS_URL, reachable

pytestmark = pytest.mark.integration

SENTIMENT = {"task": "sentiment", "inputs": {"text": "I love this"}}


def wait_until(check: object, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if check():  # type: ignore[operator]
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.25)
    pytest.fail(f"{what} not within {timeout_s} s")


def test_inference_keeps_answering_while_postgres_is_down(cluster: Launch) -> None:
    [gateway] = cluster(1)
    pg = PG_CLUSTER.format(version=postgres_version(), action="{action}")
    with gateway.client(timeout=5) as client:
        for _ in range(5):
            assert client.post("/v1/infer", json=SENTIMENT).status_code == 200
        wait_until(lambda: metric(gateway, "hybridinfer_trace_writes_buffered") == 0, 10, "flush")
        written_before = metric(gateway, "hybridinfer_trace_writes_total")
        answered: list[tuple[int, float]] = []
        try:
            run_shell(pg.format(action="stop"))
            assert not reachable(POSTGRES_URL)
            stopped = time.monotonic()
            while time.monotonic() - stopped < 10:
                sent = time.perf_counter()
                status = client.post("/v1/infer", json=SENTIMENT).status_code
                answered.append((status, time.perf_counter() - sent))
                time.sleep(0.1)
            buffered = metric(gateway, "hybridinfer_trace_writes_buffered")
            assert client.get("/readyz").status_code == 503  # honest: the store is away
        finally:
            run_shell(pg.format(action="start"))
        assert {status for status, _ in answered} == {200}
        assert max(seconds for _, seconds in answered) < 1.0  # never blocked on the store
        assert buffered >= len(answered)
        wait_until(lambda: reachable(POSTGRES_URL), 90, "PostgreSQL back")
        wait_until(lambda: client.get("/readyz").status_code == 200, 60, "ready again")
        wait_until(lambda: metric(gateway, "hybridinfer_trace_writes_buffered") == 0, 60, "backlog")
        assert metric(gateway, "hybridinfer_trace_writes_total") >= written_before + len(answered)
        assert metric(gateway, "hybridinfer_trace_writes_dropped_total") == 0
        assert client.post("/v1/infer", json=SENTIMENT).status_code == 200


def test_rate_limiting_follows_its_mode_while_redis_is_down(cluster: Launch) -> None:
    [open_gateway] = cluster(1, rate_limit_mode="fail-open")
    [closed_gateway] = cluster(1, rate_limit_mode="fail-closed")
    with open_gateway.client(timeout=5) as opened, closed_gateway.client(timeout=5) as closed:
        assert opened.post("/v1/infer", json=SENTIMENT).status_code == 200
        assert closed.post("/v1/infer", json=SENTIMENT).status_code == 200
        try:
            run_shell("redis-cli -p 6379 shutdown nosave || true")
            wait_until(lambda: not reachable(REDIS_URL), 10, "Redis stopped")
            for _ in range(5):
                assert opened.post("/v1/infer", json=SENTIMENT).status_code == 200
                refused = closed.post("/v1/infer", json=SENTIMENT)
                assert refused.status_code == 503
                assert refused.json()["error"]["code"] == "rate_limit_unavailable"
                assert refused.headers["retry-after"] == "1"
            assert metric(open_gateway, "hybridinfer_ratelimit_cache_errors_total") >= 5
        finally:
            run_shell(REDIS_START)
        wait_until(lambda: reachable(REDIS_URL), 30, "Redis back")
        wait_until(
            lambda: closed.post("/v1/infer", json=SENTIMENT).status_code == 200,
            30,
            "fail-closed gateway answering again",
        )
        assert opened.post("/v1/infer", json=SENTIMENT).status_code == 200
