"""An answer's head and body leave in one write; a streamed answer's head and a HEAD answer
are not held back (a real uvicorn server with the gateway's protocol, raw sockets)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from hybridinfer.server.serving import _HeadWithBody, server_config
from tests.peers import free_port, served_here


class Recorder:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed


HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n"
STREAMED = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n"


def test_a_head_with_a_length_leaves_with_its_body() -> None:
    recorder = Recorder()
    transport = _HeadWithBody(recorder)  # type: ignore[arg-type]
    transport.write(HEAD)
    assert recorder.writes == []
    transport.write(b"{}")
    transport.write(b"more")
    assert recorder.writes == [HEAD + b"{}", b"more"]
    assert transport.is_closing() is False  # the rest passes through


def test_a_streamed_head_and_a_continue_leave_at_once() -> None:
    recorder = Recorder()
    transport = _HeadWithBody(recorder)  # type: ignore[arg-type]
    transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
    transport.write(STREAMED)
    assert recorder.writes == [b"HTTP/1.1 100 Continue\r\n\r\n", STREAMED]


def test_a_held_head_is_sent_before_the_connection_closes() -> None:
    recorder = Recorder()
    transport = _HeadWithBody(recorder)  # type: ignore[arg-type]
    transport.write(HEAD)
    transport.close()
    assert recorder.writes == [HEAD]
    assert recorder.closed


RELEASE = asyncio.Event()


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    if scope["path"] == "/stream":
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await RELEASE.wait()  # the client has the head before any body exists
        await send({"type": "http.response.body", "body": b"data: 1\n\n"})
        return
    body = b'{"ok":true}'
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@pytest.fixture
async def server() -> AsyncIterator[int]:
    port = free_port()
    async with served_here(server_config(app, "127.0.0.1", port)):
        yield port


async def exchange(port: int, request: bytes) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    await writer.drain()
    return reader, writer


async def test_answers_arrive_whole_and_a_head_request_gets_its_head(server: int) -> None:
    reader, writer = await exchange(server, b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 2)
    assert b"content-length: 11" in head
    assert await asyncio.wait_for(reader.readexactly(11), 2) == b'{"ok":true}'
    writer.write(b"HEAD / HTTP/1.1\r\nhost: x\r\n\r\n")  # the same kept-alive connection
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 2)
    assert head.startswith(b"HTTP/1.1 200")
    writer.close()


async def test_a_streamed_answer_s_head_is_not_held_for_its_body(server: int) -> None:
    RELEASE.clear()
    reader, writer = await exchange(server, b"GET /stream HTTP/1.1\r\nhost: x\r\n\r\n")
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 2)
    assert b"transfer-encoding: chunked" in head
    RELEASE.set()
    assert b"data: 1" in await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 2)
    writer.close()
