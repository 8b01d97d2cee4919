"""Load shedding's bounds on a fake app (the real gateway's 503s: tests/e2e/test_resilience.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from starlette.types import Message, Receive, Scope, Send

from hybridinfer.errors import Overloaded
from hybridinfer.server.shedding import GatewayLoad, LoadShedder


class Blocking:
    """An ASGI app whose requests run until released."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.started = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.started += 1
        await self.release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


def http(path: str = "/v1/infer", method: str = "POST") -> dict[str, Any]:
    return {"type": "http", "method": method, "path": path, "headers": []}


async def call(shedder: LoadShedder, scope: dict[str, Any]) -> int:
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    await shedder(scope, receive, send)
    return int(sent[0]["status"])


async def test_past_running_and_waiting_bounds_requests_are_shed() -> None:
    app = Blocking()
    load = GatewayLoad(max_in_flight=2, max_queued=3, max_wait_s=5.0, retry_after_s=2.0)
    shedder = LoadShedder(app, load)
    admitted = [asyncio.create_task(call(shedder, http())) for _ in range(5)]
    await asyncio.sleep(0.01)
    assert (load.in_flight, load.queued, app.started) == (2, 3, 2)
    with pytest.raises(Overloaded) as shed:
        await call(shedder, http())
    assert shed.value.status_code == 503
    assert shed.value.headers() == {"Retry-After": "2"}
    app.release.set()
    assert await asyncio.gather(*admitted) == [200] * 5
    assert (load.in_flight, load.queued, load.shed) == (0, 0, 1)


async def test_a_request_waits_at_most_max_wait() -> None:
    app = Blocking()
    load = GatewayLoad(max_in_flight=1, max_queued=10, max_wait_s=0.05)
    shedder = LoadShedder(app, load)
    running = asyncio.create_task(call(shedder, http()))
    await asyncio.sleep(0)
    with pytest.raises(Overloaded, match=r"within 0\.05 s"):
        await call(shedder, http())
    assert load.queued == 0
    app.release.set()
    assert await running == 200


async def test_health_nodes_and_reads_are_never_shed() -> None:
    app = Blocking()
    shedder = LoadShedder(app, GatewayLoad(max_in_flight=1, max_queued=0, max_wait_s=0.01))
    running = asyncio.create_task(call(shedder, http()))
    await asyncio.sleep(0)
    others = [
        asyncio.create_task(call(shedder, scope))
        for scope in (
            http("/readyz", "GET"),
            http("/v1/nodes/edge-1/heartbeat"),
            http("/v1/nodes"),
            http("/v1/tasks/abc", "GET"),
        )
    ]
    await asyncio.sleep(0.01)
    assert app.started == 5
    app.release.set()
    assert await asyncio.gather(running, *others) == [200] * 5


async def test_a_request_that_would_wait_past_max_wait_is_refused_at_once() -> None:
    app = Blocking()
    load = GatewayLoad(max_in_flight=1, max_queued=10, max_wait_s=0.5)
    load.service_s = 0.3  # each request holds its slot 300 ms: a second waiter would wait 0.6 s
    shedder = LoadShedder(app, load)
    running = asyncio.create_task(call(shedder, http()))
    await asyncio.sleep(0)
    waiting = asyncio.create_task(call(shedder, http()))
    await asyncio.sleep(0)
    assert load.queued == 1
    with pytest.raises(Overloaded, match=r"expected in 0\.6 s"):
        await call(shedder, http())
    app.release.set()
    assert await asyncio.gather(running, waiting) == [200, 200]
    assert load.service_s is not None
    assert load.service_s < 0.3
