"""The front door on its own, around fake apps: the order of its concerns and the one send
wrapper (the real gateway through it: test_app.py, test_shedding.py, server/test_serving.py)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import orjson
import pytest
from starlette.types import Message, Receive, Scope, Send

from hybridinfer.control.keys import Principal
from hybridinfer.control.ratelimit import RateLimiter
from hybridinfer.errors import Unauthorized
from hybridinfer.gateway.frontdoor import FrontDoor
from hybridinfer.server.shedding import GatewayLoad

KEY = "front-door-key"


class Keys:
    """One valid key."""

    async def authenticate(self, presented: str) -> Principal:
        if presented != KEY:
            raise Unauthorized("unknown or revoked API key")
        return Principal(key_id="k1", scopes=frozenset({"infer"}))


class App:
    """Reads the body, then answers 200, or does what ``then`` says."""

    def __init__(self, then: str = "answer") -> None:
        self.then = then
        self.calls: list[Scope] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.calls.append(scope)
        if scope["type"] != "http":
            return
        await receive()
        if self.then == "break":
            raise RuntimeError("a bug")
        await send({"type": "http.response.start", "status": 200, "headers": []})
        if self.then == "break after start":
            raise RuntimeError("a bug mid-answer")
        await send({"type": "http.response.body", "body": b"{}"})


def door(
    app: App,
    load: GatewayLoad | None = None,
    per_minute: int = 1000,
    body_timeout_s: float = 5.0,
) -> FrontDoor:
    return FrontDoor(
        app,
        load=load or GatewayLoad(max_in_flight=4, max_queued=0),
        keys=Keys(),  # type: ignore[arg-type]
        limiter=RateLimiter(per_minute),
        body_timeout_s=body_timeout_s,
    )


async def call(
    front: FrontDoor,
    key: str | None = KEY,
    path: str = "/v1/infer",
    body_after_s: float = 0.0,
) -> list[Message]:
    headers = [(b"x-request-id", b"req-1")]
    if key is not None:
        headers.append((b"authorization", f"Bearer {key}".encode()))
    scope: dict[str, Any] = {"type": "http", "method": "POST", "path": path, "headers": headers}
    sent: list[Message] = []

    async def receive() -> Message:
        await asyncio.sleep(body_after_s)
        return {"type": "http.request", "body": b"{}", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    await front(scope, receive, send)
    return sent


def envelope(sent: list[Message]) -> tuple[int, str, dict[bytes, bytes]]:
    start, body = sent
    return start["status"], orjson.loads(body["body"])["error"]["code"], dict(start["headers"])


async def test_an_answer_carries_the_request_id_once_and_one_access_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    app = App()
    with caplog.at_level(logging.INFO, logger="hybridinfer.access"):
        sent = await call(door(app))

    assert sent[0]["status"] == 200
    assert [v for k, v in sent[0]["headers"] if k == b"x-request-id"] == [b"req-1"]
    assert app.calls[0]["state"]["principal"].key_id == "k1"
    lines = [r for r in caplog.records if r.name == "hybridinfer.access"]
    assert [(r.getMessage(), r.__dict__["status"]) for r in lines] == [("POST /v1/infer 200", 200)]


async def test_a_bug_is_a_500_envelope_stamped_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO):
        sent = await call(door(App("break")))

    status, code, headers = envelope(sent)
    assert (status, code, headers[b"x-request-id"]) == (500, "internal_error", b"req-1")
    assert b"Traceback" not in sent[1]["body"]
    access = [r.__dict__["status"] for r in caplog.records if r.name == "hybridinfer.access"]
    assert access == [500]
    assert [r.message for r in caplog.records if r.levelno >= logging.ERROR] == ["unhandled error"]


async def test_a_bug_after_the_answer_started_cuts_it_and_sends_no_second_start(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO):
        sent = await call(door(App("break after start")))

    assert [m["type"] for m in sent] == ["http.response.start"]
    access = [r.__dict__["status"] for r in caplog.records if r.name == "hybridinfer.access"]
    assert access == [200]


async def test_a_missing_or_unknown_key_is_401_and_never_reaches_the_app() -> None:
    app = App()
    front = door(app)

    for key in (None, "wrong"):
        status, code, headers = envelope(await call(front, key=key))
        assert (status, code, headers[b"x-request-id"]) == (401, "unauthorized", b"req-1")
    assert app.calls == []


async def test_public_paths_need_no_key() -> None:
    app = App()
    sent = await call(door(app), key=None, path="/healthz")

    assert sent[0]["status"] == 200
    assert "principal" not in app.calls[0]["state"]


async def test_past_its_rate_the_key_gets_429() -> None:
    front = door(App(), per_minute=1)

    assert (await call(front))[0]["status"] == 200
    status, code, headers = envelope(await call(front))
    assert (status, code) == (429, "rate_limited")
    assert b"retry-after" in headers


async def test_a_body_slower_than_the_deadline_is_408() -> None:
    status, code, _headers = envelope(await call(door(App(), body_timeout_s=0.05), body_after_s=1))

    assert (status, code) == (408, "request_timeout")


async def test_a_refusal_comes_before_the_key_check_and_the_app() -> None:
    load = GatewayLoad(max_in_flight=1, max_queued=0)
    app = App()
    held = await load.enter()
    try:
        status, code, headers = envelope(await call(door(app, load=load), key=None))
    finally:
        load.leave(held)

    assert (status, code, headers[b"x-request-id"]) == (503, "overloaded", b"req-1")
    assert app.calls == []
    assert load.in_flight == 0


async def test_the_slot_is_given_back_after_an_error() -> None:
    load = GatewayLoad(max_in_flight=1, max_queued=0)
    await call(door(App("break"), load=load))

    assert (load.in_flight, load.shed) == (0, 0)


async def test_lifespan_goes_straight_through() -> None:
    app = App()

    async def receive() -> Message:
        return {"type": "lifespan.startup"}

    async def send(message: Message) -> None:
        raise AssertionError("nothing is sent for lifespan here")

    await door(app)({"type": "lifespan"}, receive, send)
    assert app.calls == [{"type": "lifespan"}]
