"""Registration and heartbeats: keeps the control plane's view of this node current.

Registration retries with exponential backoff and jitter from 1 s to 64 s, so a node started
before its control plane (or cut off from it) joins as soon as it can.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
from collections.abc import AsyncIterator, Callable

import aiohttp
import orjson

from hybridinfer.schemas import Heartbeat, NodeRegistration

log = logging.getLogger("hybridinfer.node")


class NodeAgent:
    """Registers the node, then heartbeats every ``interval_s`` (re-registering if forgotten)."""

    def __init__(
        self,
        control_plane: str,
        token: str,
        registration: NodeRegistration,
        interval_s: float,
        in_flight: Callable[[], int],
    ) -> None:
        self._base = control_plane.rstrip("/")
        self._headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        self._registration = registration
        self._interval = interval_s
        self._in_flight = in_flight
        self.registered = asyncio.Event()

    async def _post(self, session: aiohttp.ClientSession, path: str, body: bytes) -> int:
        async with session.post(
            self._base + path, data=body, headers=self._headers, timeout=aiohttp.ClientTimeout(5)
        ) as response:
            await response.read()
            return response.status

    async def register(self, session: aiohttp.ClientSession) -> None:
        """Register, retrying with backoff (1 s doubling to 64 s, with jitter) until it works."""
        body = orjson.dumps(self._registration.model_dump(mode="json"))
        delay = 1.0
        while True:
            try:
                status = await self._post(session, "/v1/nodes", body)
                if status == 201:
                    log.info("registered node %s with %s", self._registration.id, self._base)
                    self.registered.set()
                    return
                log.warning("registration refused: HTTP %d", status)
            except (aiohttp.ClientError, OSError, TimeoutError) as exc:
                log.warning("control plane unreachable (%s); retrying in %.0f s", exc, delay)
            await asyncio.sleep(delay * random.uniform(0.8, 1.2))
            delay = min(delay * 2, 64.0)

    def _beat(self) -> bytes:
        load = os.getloadavg()[0] / (os.cpu_count() or 1)
        return orjson.dumps(Heartbeat(load=load, in_flight=self._in_flight()).model_dump())

    async def run(self) -> None:
        async with aiohttp.ClientSession() as session:
            await self.register(session)
            path = f"/v1/nodes/{self._registration.id}/heartbeat"
            while True:
                await asyncio.sleep(self._interval)
                try:
                    status = await self._post(session, path, self._beat())
                except (aiohttp.ClientError, OSError, TimeoutError) as exc:
                    log.warning("heartbeat failed: %s", exc)
                    continue
                if status == 404:  # the control plane restarted and forgot us
                    self.registered.clear()
                    await self.register(session)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        task = asyncio.create_task(self.run(), name="node-agent")
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
