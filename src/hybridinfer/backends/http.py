"""What every backend that talks HTTP to its nodes shares: one pooled aiohttp client."""

from __future__ import annotations

import aiohttp

from hybridinfer.backends.base import Backend


class HttpBackend(Backend):
    """A backend with one connection pool for all its nodes, created inside the event loop."""

    def __init__(self, connections: int = 100) -> None:
        self._connections = connections
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(limit=self._connections, ttl_dns_cache=300)
            self._session = aiohttp.ClientSession(connector=connector)
        return self._session

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
