"""The server's protocol refuses an inference request the shedder refuses at once, before it
becomes an ASGI task: a real uvicorn server with the gateway's protocol, raw sockets. The
refusal is the shedder's own (envelope, ``Retry-After``, the caller's id), the app never sees
the request, and the connection goes on as after any answer: the refused body is dropped,
answers stay in order, ``Connection: close`` is honoured. The real gateway's refusals over
HTTP: tests/e2e/test_resilience.py."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from bench.shed_cost import parse_head

from hybridinfer.server.serving import gateway_server_config, guarded_protocol, server_config
from hybridinfer.server.shedding import GatewayLoad, LoadShedder
from hybridinfer.server.workers import WORKER_HEADER, WorkerHeader
from hybridinfer.settings import Settings
from tests.peers import free_port, served_here

BODY = b'{"task":"sentiment","inputs":{"text":"fine"}}'


class App:
    """Answers 200 with the request body it read; ``/slow`` waits for ``release``."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.release = asyncio.Event()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        self.seen.append(f"{scope['method']} {scope['path']}")
        if scope["path"] == "/slow":
            await self.release.wait()
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        headers = [(b"content-length", b"%d" % len(body))]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})


@dataclass
class Served:
    port: int
    app: App
    load: GatewayLoad


@pytest.fixture
async def served() -> AsyncIterator[Served]:
    app = App()
    load = GatewayLoad(max_in_flight=1, max_queued=0, retry_after_s=2)
    shedder = LoadShedder(app, load)
    port = free_port()
    protocol = guarded_protocol(refuse_now=shedder.refuse_now)
    # The app alone is served: only the protocol can refuse (the shedder's step is not in).
    async with served_here(server_config(app, "127.0.0.1", port, protocol=protocol)):
        yield Served(port, app, load)
        app.release.set()


@dataclass
class Held:
    """A connection to the server while its one slot is held: an inference POST is refused
    at once until ``give_back``."""

    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    give_back: Callable[[], None]


@asynccontextmanager
async def refusing(served: Served) -> AsyncIterator[Held]:
    entered = await served.load.enter()
    reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
    given = False

    def give_back() -> None:
        nonlocal given
        if not given:
            served.load.leave(entered)
            given = True

    try:
        yield Held(reader, writer, give_back)
    finally:
        writer.close()
        give_back()


def post(path: str = "/v1/infer", *, body: bytes = BODY, extra: bytes = b"") -> bytes:
    return (
        b"POST %s HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
        b"content-length: %d\r\n%s\r\n" % (path.encode(), len(body), extra)
    ) + body


async def read_answer(reader: asyncio.StreamReader) -> tuple[int, dict[bytes, bytes], bytes]:
    status, headers = parse_head(await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 3))
    body = await asyncio.wait_for(reader.readexactly(int(headers[b"content-length"])), 3)
    return status, headers, body


def assert_refused(status: int, headers: dict[bytes, bytes], body: bytes) -> dict[str, Any]:
    assert status == 503
    assert headers[b"retry-after"] == b"2"
    assert headers[b"content-type"] == b"application/json"
    assert b"date" in headers  # the server's own headers, as on every answer
    error: dict[str, Any] = orjson.loads(body)["error"]
    assert error["code"] == "overloaded"
    assert error["request_id"] == headers[b"x-request-id"].decode()
    return error


async def test_a_refused_request_is_answered_by_the_protocol_and_never_reaches_the_app(
    served: Served,
) -> None:
    async with refusing(served) as held:
        reader, writer = held.reader, held.writer
        writer.write(post(extra=b"x-request-id: caller-7\r\n"))
        error = assert_refused(*await read_answer(reader))
        assert error["request_id"] == "caller-7"
        assert served.app.seen == []
        assert served.load.shed == 1
        held.give_back()
        writer.write(post())  # the same connection serves the next request
        status, _headers, body = await read_answer(reader)
        assert (status, body) == (200, BODY)
    assert served.app.seen == ["POST /v1/infer"]


async def test_a_body_that_arrives_after_the_refusal_is_dropped(served: Served) -> None:
    async with refusing(served) as held:
        reader, writer = held.reader, held.writer
        request = post(body=b"x" * 5000)
        head_end = request.index(b"\r\n\r\n") + 4
        writer.write(request[:head_end])  # refused on its head alone
        assert_refused(*await read_answer(reader))
        held.give_back()
        writer.write(request[head_end:] + post(path="/v1/tasks", body=b"{}"))
        status, _headers, body = await read_answer(reader)
        assert (status, body) == (200, b"{}")  # not the 5,000 bytes taken for a request
    assert served.app.seen == ["POST /v1/tasks"]


async def test_connection_close_is_honoured(served: Served) -> None:
    async with refusing(served) as held:
        reader, writer = held.reader, held.writer
        writer.write(post(extra=b"connection: close\r\n"))
        status, headers, body = await read_answer(reader)
        assert_refused(status, headers, body)
        assert headers[b"connection"] == b"close"
        assert await asyncio.wait_for(reader.read(), 3) == b""  # closed by the server


async def test_pipelined_answers_keep_their_order(served: Served) -> None:
    async with refusing(served) as held:
        reader, writer = held.reader, held.writer
        writer.write(post(path="/slow", body=b"first") + post())  # in one write
        await asyncio.sleep(0.1)
        served.app.release.set()  # the refusal waits behind the slow answer
        assert (await read_answer(reader))[2] == b"first"
        assert_refused(*await read_answer(reader))


async def test_only_inference_posts_are_refused(served: Served) -> None:
    async with refusing(served) as held:
        reader, writer = held.reader, held.writer
        writer.write(post(path="/v1/admin/keys", body=b"{}"))  # never shed
        assert (await read_answer(reader))[0] == 200
    assert served.load.shed == 0


def test_a_worker_names_itself_on_the_protocol_s_refusals() -> None:
    load = GatewayLoad(max_in_flight=1, max_queued=0)
    shedder = LoadShedder(App(), load)
    named = WorkerHeader(shedder, 3).named(shedder.refuse_now)
    scope = {"type": "http", "method": "POST", "path": "/v1/infer", "headers": []}
    assert named(scope) is None  # a free slot: not refused, nothing to name

    async def hold_and_refuse() -> dict[bytes, bytes]:
        await load.enter()
        refusal = named(scope)
        assert refusal is not None
        return dict(refusal[0])

    headers = asyncio.run(hold_and_refuse())
    assert headers[WORKER_HEADER] == b"3"
    assert b"retry-after" in headers


def test_the_gateway_s_server_refuses_with_the_front_door_s_shedder(tmp_path: Path) -> None:
    def refuse_now(scope: Any) -> None:
        return None

    config = gateway_server_config(object(), Settings(data_dir=tmp_path), refuse_now)
    assert config.http.refuse_now is refuse_now  # type: ignore[union-attr]
    assert config.http.header_timeout_s == Settings(data_dir=tmp_path).header_timeout_s  # type: ignore[union-attr]
