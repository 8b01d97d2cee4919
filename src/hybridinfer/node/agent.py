"""Registration and heartbeats: keeps the control plane's view of this node current.

Heartbeats carry CPU and memory use, requests in flight and the micro-batchers' queue depth;
the node re-registers when its deployments change (a new model version switched in).

Registration retries with exponential backoff and jitter from 1 s to 64 s, so a node started
before its control plane (or cut off from it) joins as soon as it can.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections.abc import Callable

import aiohttp
import orjson

from hybridinfer.core import background
from hybridinfer.core.backoff import Backoff
from hybridinfer.core.schemas import Heartbeat, NodeRegistration

log = logging.getLogger("hybridinfer.node")


class NodeAgent:
    """Registers the node, then heartbeats every ``interval_s`` (re-registering if forgotten)."""

    def __init__(
        self,
        control_plane: str,
        token: str,
        registration: Callable[[], NodeRegistration],
        interval_s: float,
        load: Callable[[], Heartbeat],
        on_beat: Callable[[], None] | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self._base = control_plane.rstrip("/")
        self._tls: ssl.SSLContext | bool = True if tls is None else tls
        self._headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        self._registration = registration
        self._interval = interval_s
        self._load = load
        self._on_beat = on_beat
        self._announced = b""
        self.registered = asyncio.Event()

    async def _post(self, session: aiohttp.ClientSession, path: str, body: bytes) -> int:
        async with session.post(
            self._base + path, data=body, headers=self._headers, timeout=aiohttp.ClientTimeout(5)
        ) as response:
            await response.read()
            return response.status

    async def register(self, session: aiohttp.ClientSession) -> None:
        """Register, retrying with backoff (1 s doubling to 64 s, with jitter) until it works."""
        registration = self._registration()
        body = orjson.dumps(registration.model_dump(mode="json"))
        backoff = Backoff()
        while True:
            try:
                status = await self._post(session, "/v1/nodes", body)
                if status == 201:
                    log.info("registered node %s with %s", registration.id, self._base)
                    self._announced = body
                    self.registered.set()
                    return
                log.warning("registration refused: HTTP %d", status)
            except (aiohttp.ClientError, OSError, TimeoutError) as exc:
                log.warning(
                    "control plane unreachable (%s); retrying in %.0f s", exc, backoff.current_s
                )
            await backoff.wait()

    def _beat(self) -> bytes:
        return orjson.dumps(self._load().model_dump())

    def _changed(self) -> bool:
        """Whether the deployments changed since registration (a version was switched in)."""
        body = orjson.dumps(self._registration().model_dump(mode="json"))
        return body != self._announced

    async def run(self) -> None:
        connector = aiohttp.TCPConnector(ssl=self._tls)
        async with aiohttp.ClientSession(connector=connector) as session:
            await self.register(session)
            path = f"/v1/nodes/{self._registration().id}/heartbeat"
            while True:
                await asyncio.sleep(self._interval)
                if self._on_beat is not None:
                    self._on_beat()
                if self._changed():
                    await self.register(session)
                try:
                    status = await self._post(session, path, self._beat())
                except (aiohttp.ClientError, OSError, TimeoutError) as exc:
                    log.warning("heartbeat failed: %s", exc)
                    continue
                if status == 404:  # the control plane restarted and forgot us
                    self.registered.clear()
                    await self.register(session)

    def running(self) -> contextlib.AbstractAsyncContextManager[None]:
        """Run for the duration of a block (the node app's lifespan)."""
        return background.running(self.run(), "node-agent")
