"""The request path's HTTP/1.1 client: one POST of a JSON body to a node, its whole answer back.

Why not aiohttp here (it stays for streamed answers and the off-path calls): measured side by
side against the same instant upstream (``bench/upstream_client.py``), aiohttp's
``ClientSession.post`` ran 7.8 times the Python instructions of this client and 3.4 times its
CPU per call (on 2 cores, one run), and that work sits on the request path of every remote
subtask. What makes aiohttp heavy is what this
path never needs: cookies, redirects, proxies, request signals, multipart, a URL object and a
multi-dict per call. The response is parsed by httptools (llhttp, the parser uvicorn serves
with); what is written here is only the pool and a request's framing.

Per call: a pooled keep-alive connection to the origin is taken (or one is opened, TLS
included), the request head and body go out in one write, the parser's callbacks collect the
answer, and a future resolves with ``(status, body)``. A connection goes back to the pool only
after a whole answer that allows keep-alive; a timeout, a cancel or a parse error closes it (its
state is unknown). A reused connection that the server had already closed (its idle timeout
raced our request: no byte came back) is retried once on a new connection, as browsers and
urllib3 do; any other failure is the caller's. The pool holds at most ``limit`` connections in
all; a caller past that waits for one to come free.
"""

from __future__ import annotations

import asyncio
import ssl
import time
import zlib
from collections import deque
from collections.abc import Mapping
from functools import lru_cache
from typing import NamedTuple
from urllib.parse import urlsplit

import httptools

IDLE_S = 15.0
"""A pooled connection idle longer than this is closed rather than reused (aiohttp's keep-alive
default): servers drop idle connections after a few seconds, and a dropped one costs a retry."""
MAX_BODY = 64 * 1024 * 1024
"""The largest answer read; a bigger one fails the call instead of filling the memory."""
USER_AGENT = b"hybridinfer"


class StaleConnection(ConnectionResetError):
    """A reused connection closed by the server before any byte of the answer came back."""


class BadAnswer(ValueError):
    """An answer that parsed as HTTP but cannot be used: too large, or its encoding unreadable."""


class AnswerTooLarge(BadAnswer):
    """The answer's body passed ``MAX_BODY``."""


class Origin(NamedTuple):
    """Where connections go: one pool per origin. A tuple: it keys the pools, and a tuple
    hashes in C where a frozen dataclass's ``__hash__`` is Python."""

    host: str
    port: int
    tls: bool
    host_header: str


@lru_cache(maxsize=4096)
def split_url(url: str) -> tuple[Origin, bytes]:
    """The origin of an ``http``/``https`` URL and its request-line target (path and query).

    ValueError for another scheme, a URL without a host, or control characters (a header
    injection through a node's URL).
    """
    if any(char in url for char in "\r\n\t\0 "):
        raise ValueError(f"the URL {url!r} holds whitespace or control characters")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL with a host: {url!r}")
    tls = parts.scheme == "https"
    port = parts.port or (443 if tls else 80)
    host = parts.hostname
    shown = f"[{host}]" if ":" in host else host
    host_header = shown if port == (443 if tls else 80) else f"{shown}:{port}"
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return Origin(host, port, tls, host_header), target.encode("ascii")


class Connection(asyncio.Protocol):
    """One keep-alive connection; the answer to its one request in flight resolves ``waiter``."""

    def __init__(self, client: HttpClient, origin: Origin) -> None:
        self._client = client
        self.origin = origin
        self.transport: asyncio.Transport | None = None
        self._parser = httptools.HttpResponseParser(self)
        self._waiter: asyncio.Future[tuple[int, bytes]] | None = None
        self._body: list[bytes] = []
        self._size = 0
        self._answered = False
        """A byte of the current answer has come back."""
        self._headers_done = False
        self._framed = False
        """The answer has a length or chunks (else its body runs to the connection's end)."""
        self._encoding: bytes | None = None
        self._too_large: AnswerTooLarge | None = None
        self.reused = False
        self.idle_since = 0.0
        self.closed = False

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # create_connection's is a Transport

    def data_received(self, data: bytes) -> None:
        if self._waiter is None:  # bytes nobody asked for: the connection is not ours to trust
            self.close()
            return
        self._answered = True
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(self._too_large or exc)
            self.close()

    def eof_received(self) -> None:
        return None  # close the transport: half-open connections are of no use here

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._client.forget(self)
        waiter = self._waiter
        if waiter is None or waiter.done():
            return
        if self._headers_done and not self._framed:  # the body ran to the end of the connection
            self._complete()
        elif not self._answered and self.reused:
            self._fail(StaleConnection("the pooled connection was closed by the server"))
        else:
            self._fail(exc or ConnectionResetError("the server closed the connection mid-answer"))

    # httptools callbacks
    def on_header(self, name: bytes, value: bytes) -> None:
        name = name.lower()
        if name == b"content-length" or name == b"transfer-encoding":
            self._framed = True
        elif name == b"content-encoding" and value.lower() != b"identity":
            self._encoding = value.lower()

    def on_headers_complete(self) -> None:
        self._headers_done = True

    def on_body(self, body: bytes) -> None:
        self._size += len(body)
        if self._size > MAX_BODY:
            self._too_large = AnswerTooLarge(f"the answer passed {MAX_BODY} bytes")
            raise self._too_large  # httptools stops parsing and raises its own error
        self._body.append(body)

    def on_message_complete(self) -> None:
        if self._parser.get_status_code() < 200:  # an interim answer (100 Continue): wait on
            self._reset()
            return
        if self._complete() and self._parser.should_keep_alive() and not self.closed:
            self._client.release(self)
        else:
            self.close()

    # the request
    def send(self, data: bytes) -> asyncio.Future[tuple[int, bytes]]:
        """Writes one request; the future resolves with its status and body."""
        assert self.transport is not None
        self._waiter = waiter = self._client.loop.create_future()
        self._reset()
        self._answered = False
        self.transport.write(data)
        return waiter

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
        self.closed = True

    def _reset(self) -> None:
        self._body = []
        self._size = 0
        self._headers_done = False
        self._framed = False
        self._encoding = None

    def _complete(self) -> bool:
        """Resolves the waiter with the answer; False when there was none or it is unusable."""
        waiter, self._waiter = self._waiter, None
        if waiter is None or waiter.done():
            return False
        body = b"".join(self._body)
        if self._encoding is not None:
            try:
                body = decoded(body, self._encoding)
            except BadAnswer as exc:
                waiter.set_exception(exc)
                return False
        waiter.set_result((self._parser.get_status_code(), body))
        return True

    def _fail(self, exc: BaseException) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)


def decoded(body: bytes, encoding: bytes) -> bytes:
    """A body sent compressed although no ``Accept-Encoding`` asked for it."""
    if encoding not in (b"gzip", b"x-gzip", b"deflate"):
        raise BadAnswer(f"an answer in an encoding that was not asked for: {encoding!r}")
    try:
        return zlib.decompress(body, wbits=zlib.MAX_WBITS | 32)  # gzip or zlib, by its header
    except zlib.error as exc:
        raise BadAnswer(f"a {encoding.decode()} body that does not decompress: {exc}") from None


class HttpClient:
    """A pool of keep-alive HTTP/1.1 connections, at most ``limit`` open, made inside a loop."""

    def __init__(self, limit: int = 100, tls: ssl.SSLContext | bool = True) -> None:
        self.loop = asyncio.get_running_loop()
        self._limit = limit
        self._tls = tls
        self._idle: dict[Origin, deque[Connection]] = {}
        self._open: set[Connection] = set()
        self._opening = 0
        self._freed: deque[asyncio.Future[None]] = deque()
        self._closed = False

    @property
    def open_connections(self) -> int:
        """Connections open now, idle or busy."""
        return len(self._open)

    async def post(
        self, url: str, body: bytes, headers: Mapping[str, str], timeout_s: float
    ) -> tuple[int, bytes]:
        """The status and body of a POST; TimeoutError past ``timeout_s`` (connecting included).

        ValueError for a URL this client cannot call; OSError (ConnectionError among them) for
        a connection that failed; httptools.HttpParserError for an answer that is not HTTP.
        """
        origin, target = split_url(url)
        lines = "".join([f"{name}: {value}\r\n" for name, value in headers.items()])
        if lines.count("\n") != len(headers) or lines.count("\r") != len(headers):
            raise ValueError("a header name or value holds a line break")
        request = b"".join(
            (
                b"POST %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: %s\r\nContent-Length: %d\r\n"
                % (target, origin.host_header.encode(), USER_AGENT, len(body)),
                lines.encode("latin-1"),
                b"\r\n",
                body,
            )
        )
        deadline = self.loop.time() + timeout_s
        try:
            return await self._exchange(origin, request, deadline, fresh=False)
        except StaleConnection:
            return await self._exchange(origin, request, deadline, fresh=True)

    async def _exchange(
        self, origin: Origin, request: bytes, deadline: float, fresh: bool
    ) -> tuple[int, bytes]:
        connection = None if fresh else self._pooled(origin)
        if connection is None:
            async with asyncio.timeout_at(deadline):
                connection = await self._acquire(origin, fresh)
        waiter = connection.send(request)
        timer = self.loop.call_at(deadline, _expire, waiter)
        try:
            return await waiter
        except BaseException:
            connection.close()  # a cancel, a timeout or a bad answer: its state is unknown
            raise
        finally:
            timer.cancel()

    def _pooled(self, origin: Origin) -> Connection | None:
        """The most recently used idle connection to ``origin`` that is still fit to reuse."""
        idle = self._idle.get(origin)
        while idle:
            connection = idle.pop()
            assert connection.transport is not None
            if connection.transport.is_closing():
                continue
            if time.monotonic() - connection.idle_since > IDLE_S:
                connection.close()
                continue
            connection.reused = True
            return connection
        return None

    async def _acquire(self, origin: Origin, fresh: bool) -> Connection:
        """A pooled connection to ``origin`` or a new one, waiting while ``limit`` are open."""
        while True:
            if self._closed:
                raise ConnectionAbortedError("the client is closed")
            if not fresh and (connection := self._pooled(origin)) is not None:
                return connection
            if len(self._open) + self._opening < self._limit:
                return await self._connect(origin)
            self._close_an_idle_connection()  # its place frees once its transport has closed
            freed = self.loop.create_future()
            self._freed.append(freed)
            await freed

    async def _connect(self, origin: Origin) -> Connection:
        self._opening += 1
        try:
            transport, connection = await self.loop.create_connection(
                lambda: Connection(self, origin),
                origin.host,
                origin.port,
                ssl=self._tls if origin.tls else None,
                server_hostname=origin.host if origin.tls else None,
            )
        finally:
            self._opening -= 1
            self._wake_one()
        connection.transport = transport  # uvloop may call connection_made after this returns
        self._open.add(connection)
        return connection

    def _close_an_idle_connection(self) -> None:
        for idle in self._idle.values():
            if idle:
                idle.popleft().close()  # the least recently used; forget() wakes a waiter
                return

    def release(self, connection: Connection) -> None:
        """Back to the pool after a whole answer (called by the connection itself)."""
        connection.idle_since = time.monotonic()
        idle = self._idle.get(connection.origin)
        if idle is None:
            idle = self._idle[connection.origin] = deque()
        idle.append(connection)
        self._wake_one()

    def forget(self, connection: Connection) -> None:
        """A closed connection leaves the pool and frees its place."""
        self._open.discard(connection)
        idle = self._idle.get(connection.origin)
        if idle is not None and connection in idle:
            idle.remove(connection)
        self._wake_one()

    def _wake_one(self) -> None:
        while self._freed:
            freed = self._freed.popleft()
            if not freed.done():
                freed.set_result(None)
                return

    async def aclose(self) -> None:
        """Closes every connection, idle or busy."""
        self._closed = True
        for connection in list(self._open):
            connection.close()
        self._idle.clear()
        while self._freed:
            self._wake_one()
        await asyncio.sleep(0)  # the transports' connection_lost callbacks run


def _expire(waiter: asyncio.Future[tuple[int, bytes]]) -> None:
    if not waiter.done():
        waiter.set_exception(TimeoutError())
