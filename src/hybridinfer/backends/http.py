"""What every backend that talks HTTP to its nodes shares: two pooled clients.

A POST that waits for a whole answer (a chat, an embedding, a V2 inference: the request path)
goes through ``httpclient.HttpClient``, lean enough for the path; a streamed answer and a V2
node's readiness check go through one aiohttp session.
"""

from __future__ import annotations

import asyncio
import ssl
from typing import Any

import aiohttp
import httptools
import orjson

from hybridinfer.backends.base import Backend
from hybridinfer.backends.httpclient import BadAnswer, HttpClient
from hybridinfer.core.tracecontext import outgoing_headers
from hybridinfer.errors import DeadlineExceeded, UpstreamError, UpstreamUnavailable

JSON_HEADERS = {"Content-Type": "application/json"}


def json_object(raw: bytes, status: int, model: str) -> dict[str, Any]:
    """An upstream's body as a JSON object; UpstreamError when it is not one."""
    try:
        payload = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise UpstreamError(
            f"{model}: HTTP {status} with a body that is not JSON",
            upstream_status=status if status >= 400 else None,
        ) from None
    if not isinstance(payload, dict):
        raise UpstreamError(f"{model}: HTTP {status}: the body is not a JSON object")
    return payload


class HttpBackend(Backend):
    """A backend with one connection pool for all its nodes, created inside the event loop."""

    def __init__(self, connections: int = 100, tls: ssl.SSLContext | None = None) -> None:
        self._connections = connections
        self._tls: ssl.SSLContext | bool = True if tls is None else tls
        self._session: aiohttp.ClientSession | None = None
        self._lean: HttpClient | None = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(
                limit=self._connections, ttl_dns_cache=300, ssl=self._tls
            )
            # One session carries every caller's requests: a cookie an upstream set for one
            # caller must not ride along with the next caller's request, so none is kept.
            self._session = aiohttp.ClientSession(
                connector=connector, cookie_jar=aiohttp.DummyCookieJar()
            )
        return self._session

    def _lean_client(self) -> HttpClient:
        lean = self._lean
        if lean is None or lean.loop is not asyncio.get_running_loop():
            lean = self._lean = HttpClient(self._connections, self._tls)
        return lean

    async def _send(self, url: str, body: bytes, timeout_s: float, model: str) -> tuple[int, bytes]:
        """POST JSON (with the request's ``traceparent``); the status and raw body, with
        transport failures mapped to our errors."""
        try:
            return await self._lean_client().post(
                url, body, outgoing_headers(JSON_HEADERS), timeout_s
            )
        except TimeoutError:
            raise DeadlineExceeded(f"{model} did not answer within the deadline") from None
        except (httptools.HttpParserError, BadAnswer) as exc:
            raise UpstreamError(f"{model}: an answer that is not usable HTTP: {exc}") from None
        except (OSError, ValueError) as exc:
            raise UpstreamUnavailable(f"{model}: {type(exc).__name__}: {exc}") from None

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
        if self._lean is not None:
            await self._lean.aclose()
            self._lean = None
