from __future__ import annotations

import random
import time

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from hybridinfer.node.faults import FaultInjector


async def ready(request: Request) -> JSONResponse:
    return JSONResponse({"ready": True})


def client() -> TestClient:
    app = Starlette(routes=[Route("/v2/health/ready", ready), Route("/other", ready)])
    return TestClient(FaultInjector(app, token="secret", rng=random.Random(7)))


def test_admin_needs_the_node_token() -> None:
    with client() as test_client:
        assert test_client.get("/admin/faults").status_code == 401
        wrong = test_client.put(
            "/admin/faults", json={"delay_ms": 5}, headers={"Authorization": "Bearer x"}
        )
        assert wrong.status_code == 401


def test_delay_applies_to_v2_paths_only_and_can_be_removed() -> None:
    auth = {"Authorization": "Bearer secret"}
    with client() as test_client:
        assert (
            test_client.put("/admin/faults", json={"delay_ms": 150}, headers=auth).status_code
            == 200
        )
        started = time.perf_counter()
        assert test_client.get("/v2/health/ready").status_code == 200
        assert time.perf_counter() - started >= 0.15
        started = time.perf_counter()
        test_client.get("/other")
        assert time.perf_counter() - started < 0.15
        test_client.delete("/admin/faults", headers=auth)
        started = time.perf_counter()
        test_client.get("/v2/health/ready")
        assert time.perf_counter() - started < 0.15


def test_abort_percentage_is_honoured() -> None:
    auth = {"Authorization": "Bearer secret"}
    with client() as test_client:
        test_client.put(
            "/admin/faults", json={"abort_percent": 30, "abort_status": 502}, headers=auth
        )
        statuses = [test_client.get("/v2/health/ready").status_code for _ in range(400)]
        aborted = statuses.count(502)
        assert 80 <= aborted <= 160  # 30 % of 400, within a generous margin
        assert set(statuses) == {200, 502}
        bad = test_client.put("/admin/faults", json={"abort_percent": 300}, headers=auth)
        assert bad.status_code == 400


def test_a_delay_percentage_slows_that_share_of_requests_only() -> None:
    """A brownout: 30 % of exchanges slow, the rest as fast as ever."""
    auth = {"Authorization": "Bearer secret"}
    with client() as test_client:
        faults = {"delay_ms": 40, "delay_percent": 30}
        assert test_client.put("/admin/faults", json=faults, headers=auth).status_code == 200
        timings = []
        for _ in range(100):
            started = time.perf_counter()
            test_client.get("/v2/health/ready")
            timings.append(time.perf_counter() - started)
        delayed = sum(timing >= 0.04 for timing in timings)
        assert 15 <= delayed <= 45  # 30 % of 100, within a generous margin
        assert test_client.get("/admin/faults", headers=auth).json()["delay_percent"] == 30
