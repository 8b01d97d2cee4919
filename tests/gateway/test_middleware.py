"""The error middleware on its own: what reaches the caller and the log."""

from __future__ import annotations

import logging

import pytest
from starlette.requests import Request
from starlette.types import Message, Receive, Scope, Send

from hybridinfer.gateway.middleware import ErrorMiddleware, RequestIdMiddleware


async def reads_its_body(scope: Scope, receive: Receive, send: Send) -> None:
    await Request(scope, receive).body()  # raises ClientDisconnect if the caller went away


async def breaks(scope: Scope, receive: Receive, send: Send) -> None:
    raise RuntimeError("a bug")


async def call(app: object, messages: list[Message]) -> list[Message]:
    sent: list[Message] = []
    scope = {"type": "http", "method": "POST", "path": "/v1/infer", "headers": [], "state": {}}

    async def receive() -> Message:
        return messages.pop(0)

    async def send(message: Message) -> None:
        sent.append(message)

    await RequestIdMiddleware(ErrorMiddleware(app))(scope, receive, send)  # type: ignore[arg-type]
    return sent


async def test_a_caller_that_went_away_before_its_body_is_not_an_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO):
        sent = await call(reads_its_body, [{"type": "http.disconnect"}])

    assert sent == []  # nobody to answer
    assert "client went away" in caplog.text
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR]


async def test_a_bug_is_a_500_envelope_and_one_logged_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sent = await call(breaks, [])

    assert sent[0]["status"] == 500
    assert b"internal error" in sent[1]["body"]
    assert [record.message for record in caplog.records if record.levelno >= logging.ERROR] == [
        "unhandled error"
    ]
