"""The request path's HTTP client against real loopback servers that answer as each case needs:
keep-alive reuse, every framing of an answer, stale and broken connections, timeouts, cancels,
the connection limit, TLS, and input it must refuse."""

from __future__ import annotations

import asyncio
import gzip
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import httptools
import pytest
import trustme

from hybridinfer.backends import httpclient
from hybridinfer.backends.httpclient import AnswerTooLarge, BadAnswer, HttpClient, split_url

JSON = {"Content-Type": "application/json"}
OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"


@dataclass
class Seen:
    """What the server saw: the connections it accepted, the requests (head, body) on each."""

    connections: int = 0
    requests: list[tuple[bytes, bytes]] = field(default_factory=list)
    open_now: int = 0
    most_open: int = 0
    arrived: asyncio.Event = field(default_factory=asyncio.Event)


Answer = Callable[[int, int, bytes, asyncio.StreamWriter], Awaitable[bool]]
"""(connection number, request number on it, request head, writer) → keep the connection?"""


async def read_request(reader: asyncio.StreamReader) -> tuple[bytes, bytes] | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return head, await reader.readexactly(length)


@asynccontextmanager
async def server(
    answer: Answer, tls: ssl.SSLContext | None = None
) -> AsyncIterator[tuple[str, Seen]]:
    seen = Seen()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.connections += 1
        number = seen.connections
        seen.open_now += 1
        seen.most_open = max(seen.most_open, seen.open_now)
        try:
            index = 0
            while (request := await read_request(reader)) is not None:
                seen.requests.append(request)
                seen.arrived.set()
                if not await answer(number, index, request[0], writer):
                    break
                index += 1
        finally:
            seen.open_now -= 1
            writer.close()

    listening = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=tls)
    port = listening.sockets[0].getsockname()[1]
    scheme = "https" if tls else "http"
    try:
        yield f"{scheme}://127.0.0.1:{port}/v1/chat/completions?x=1", seen
    finally:
        listening.close()


def fixed(*answers: bytes, keep: bool = True) -> Answer:
    """Writes the answers in turn (the last one again and again)."""

    async def answer(_conn: int, _index: int, _head: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(answers[min(len(fixed_calls), len(answers) - 1)])
        fixed_calls.append(1)
        await writer.drain()
        return keep

    fixed_calls: list[int] = []
    return answer


async def test_a_connection_is_kept_alive_and_reused() -> None:
    async with server(fixed(OK)) as (url, seen):
        client = HttpClient()
        for _ in range(3):
            assert await client.post(url, b'{"a":1}', JSON, 5.0) == (200, b"ok")
        await client.aclose()
    assert seen.connections == 1
    head, body = seen.requests[0]
    assert body == b'{"a":1}'
    assert head.startswith(b"POST /v1/chat/completions?x=1 HTTP/1.1\r\n")
    assert b"\r\nHost: 127.0.0.1:" in head
    assert b"\r\nContent-Type: application/json\r\n" in head
    assert b"\r\nContent-Length: 7\r\n" in head


@pytest.mark.parametrize(
    ("answer", "keep"),
    [
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"3\r\nhel\r\n2\r\nlo\r\n0\r\n\r\n",
            True,
        ),
        (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", True),
        (
            b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n%s"
            % (len(gzip.compress(b"hello")), gzip.compress(b"hello")),
            True,
        ),
        # the body runs to the end of the connection
        (b"HTTP/1.0 200 OK\r\n\r\nhello", False),
        (b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 5\r\n\r\nhello", True),
    ],
    ids=["chunked", "interim-100", "gzip", "to-the-end", "connection-close"],
)
async def test_every_framing_of_an_answer_reads_whole(answer: bytes, keep: bool) -> None:
    """Kept alive where the answer allows it; where it does not, the next call opens a new
    connection."""
    async with server(fixed(answer, keep=keep)) as (url, seen):
        client = HttpClient()
        assert await client.post(url, b"{}", JSON, 5.0) == (200, b"hello")
        assert await client.post(url, b"{}", JSON, 5.0) == (200, b"hello")
        await client.aclose()
    reusable = b"HTTP/1.1 200 OK\r\nConnection: close" not in answer and keep
    assert seen.connections == (1 if reusable else 2)


async def test_a_pooled_connection_the_server_dropped_is_retried_once_on_a_new_one() -> None:
    async def second_request_dropped(
        _conn: int, index: int, _head: bytes, writer: asyncio.StreamWriter
    ) -> bool:
        if index == 1:  # the server's idle timeout raced the client's request: no answer
            return False
        writer.write(OK)
        await writer.drain()
        return True

    async with server(second_request_dropped) as (url, seen):
        client = HttpClient()
        assert await client.post(url, b"{}", JSON, 5.0) == (200, b"ok")
        assert await client.post(url, b"{}", JSON, 5.0) == (200, b"ok")
        await client.aclose()
    assert seen.connections == 2
    assert len(seen.requests) == 3


async def test_a_new_connection_closed_without_an_answer_fails_without_a_retry() -> None:
    async def hang_up(_conn: int, _index: int, _head: bytes, _writer: asyncio.StreamWriter) -> bool:
        return False

    async with server(hang_up) as (url, seen):
        client = HttpClient()
        with pytest.raises(ConnectionResetError):
            await client.post(url, b"{}", JSON, 5.0)
        await client.aclose()
    assert len(seen.requests) == 1


async def test_a_connection_cut_mid_answer_fails() -> None:
    cut = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly part"
    async with server(fixed(cut, keep=False)) as (url, _seen):
        client = HttpClient()
        with pytest.raises(ConnectionResetError):
            await client.post(url, b"{}", JSON, 5.0)
        await client.aclose()


async def silent(_conn: int, _index: int, _head: bytes, _writer: asyncio.StreamWriter) -> bool:
    await asyncio.sleep(30)
    return False


def silent_first() -> Answer:
    """No answer to the first request; ``OK`` to every later one."""
    answers: list[Answer] = [silent]
    ok = fixed(OK)

    async def answer(conn: int, index: int, head: bytes, writer: asyncio.StreamWriter) -> bool:
        return await (answers.pop() if answers else ok)(conn, index, head, writer)

    return answer


async def test_a_timeout_closes_the_connection_and_the_next_call_opens_a_new_one() -> None:
    async with server(silent_first()) as (url, seen):
        client = HttpClient()
        started = asyncio.get_running_loop().time()
        with pytest.raises(TimeoutError):
            await client.post(url, b"{}", JSON, 0.2)
        assert asyncio.get_running_loop().time() - started < 2.0
        await asyncio.sleep(0.05)
        assert client.open_connections == 0
        assert await client.post(url, b"{}", JSON, 5.0) == (200, b"ok")
        await client.aclose()
    assert seen.connections == 2


async def test_a_cancelled_call_does_not_return_its_connection_to_the_pool() -> None:
    async with server(silent_first()) as (url, seen):
        client = HttpClient()
        call = asyncio.create_task(client.post(url, b"{}", JSON, 30.0))
        await seen.arrived.wait()
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        await asyncio.sleep(0.05)
        assert client.open_connections == 0  # closed, not left waiting for the answer
        assert await client.post(url, b"{}", JSON, 5.0) == (200, b"ok")
        assert client.open_connections == 1
        await client.aclose()
    assert seen.connections == 2


async def test_no_more_connections_than_the_limit_are_open() -> None:
    async def slow(_conn: int, _index: int, _head: bytes, writer: asyncio.StreamWriter) -> bool:
        await asyncio.sleep(0.05)
        writer.write(OK)
        await writer.drain()
        return True

    async with server(slow) as (url, seen):
        client = HttpClient(limit=2)
        answers = await asyncio.gather(*(client.post(url, b"{}", JSON, 10.0) for _ in range(8)))
        await client.aclose()
    assert answers == [(200, b"ok")] * 8
    assert seen.most_open == 2
    assert seen.connections == 2


async def test_at_the_limit_an_idle_connection_to_another_origin_is_closed_for_a_new_one() -> None:
    async with server(fixed(OK)) as (first, _), server(fixed(OK)) as (second, seen_second):
        client = HttpClient(limit=1)
        assert await client.post(first, b"{}", JSON, 5.0) == (200, b"ok")
        assert await client.post(second, b"{}", JSON, 5.0) == (200, b"ok")
        await client.aclose()
    assert seen_second.connections == 1


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (b"SSH-2.0-OpenSSH_9.6\r\n", httptools.HttpParserError),
        (b"HTTP/1.1 200 OK\r\nContent-Encoding: br\r\nContent-Length: 2\r\n\r\nok", BadAnswer),
        (b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 2\r\n\r\nok", BadAnswer),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n123456789", AnswerTooLarge),
    ],
    ids=["not-http", "unasked-encoding", "bad-gzip", "too-large"],
)
async def test_an_answer_that_cannot_be_used_fails_the_call(
    answer: bytes, error: type[Exception], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(httpclient, "MAX_BODY", 8)
    async with server(fixed(answer, OK)) as (url, seen):
        client = HttpClient()
        with pytest.raises(error):
            await client.post(url, b"{}", JSON, 5.0)
        assert await client.post(url, b"{}", JSON, 5.0) == (200, b"ok")  # on a new connection
        await client.aclose()
    assert seen.connections == 2


async def test_a_refused_connection_is_an_os_error() -> None:
    async with server(fixed(OK)) as (url, _):
        pass  # closed: nothing listens on its port any more
    client = HttpClient()
    with pytest.raises(ConnectionRefusedError):
        await client.post(url, b"{}", JSON, 5.0)
    await client.aclose()


@pytest.mark.parametrize(
    ("url", "headers"),
    [
        ("http://127.0.0.1:1/v1\r\nX-Injected: 1", JSON),
        ("ftp://127.0.0.1/v1", JSON),
        ("http:///v1", JSON),
        ("http://127.0.0.1:1/v1", {"traceparent": "00-1\r\nX-Injected: 1"}),
        ("http://127.0.0.1:1/v1", {"X-Bad\n": "1"}),
    ],
    ids=["url-crlf", "scheme", "no-host", "value-crlf", "name-lf"],
)
async def test_a_url_or_header_that_would_split_the_request_is_refused(
    url: str, headers: dict[str, str]
) -> None:
    client = HttpClient()
    with pytest.raises(ValueError, match=r"URL|line break"):
        await client.post(url, b"{}", headers, 5.0)
    await client.aclose()


def test_the_host_header_names_the_port_only_when_it_is_not_the_default() -> None:
    assert split_url("https://node.test/v2/models/m/infer")[0].host_header == "node.test"
    assert split_url("http://node.test:8080/x")[0].host_header == "node.test:8080"
    assert split_url("http://[::1]:8080/x")[0].host_header == "[::1]:8080"
    assert split_url("http://node.test")[1] == b"/"


async def test_tls_is_verified_against_the_context_it_is_given() -> None:
    authority = trustme.CA()
    served = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("127.0.0.1").configure_cert(served)
    trusting = ssl.create_default_context()
    authority.configure_trust(trusting)
    async with server(fixed(OK), tls=served) as (url, seen):
        client = HttpClient(tls=trusting)
        assert await client.post(url, b"{}", JSON, 5.0) == (200, b"ok")
        assert await client.post(url, b"{}", JSON, 5.0) == (200, b"ok")
        await client.aclose()
        stranger = HttpClient()  # the system's trust store: this CA is not in it
        with pytest.raises(ssl.SSLCertVerificationError):
            await stranger.post(url, b"{}", JSON, 5.0)
        await stranger.aclose()
    assert seen.connections == 1  # the stranger's handshake failed before it was served


async def test_closing_the_client_closes_its_connections_and_refuses_new_calls() -> None:
    async with server(fixed(OK)) as (url, seen):
        client = HttpClient()
        assert await client.post(url, b"{}", JSON, 5.0) == (200, b"ok")
        await client.aclose()
        for _ in range(100):
            if seen.open_now == 0:
                break
            await asyncio.sleep(0.01)
        assert seen.open_now == 0
        with pytest.raises(ConnectionAbortedError):
            await client.post(url, b"{}", JSON, 5.0)
