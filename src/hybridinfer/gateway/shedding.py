"""Load shedding at the gateway: a bound on requests running and waiting, 503 past it.

Inference requests (``POST`` to the paths that run models) hold one of ``max_in_flight``
slots while they run; up to ``max_queued`` more wait for a slot, at most ``max_wait_s``. Past
either bound the request is answered at once with 503 ``overloaded`` and ``Retry-After``,
before its body is read, so memory stays bounded however hard the gateway is pushed. Health,
metrics, node registration and heartbeats, and the admin API are never shed: under overload
the gateway must still see its nodes and answer its probes.
"""

from __future__ import annotations

import asyncio

from starlette.types import ASGIApp, Receive, Scope, Send

from hybridinfer.errors import Overloaded

SHED_PATHS = frozenset({"/v1/infer", "/v1/tasks", "/v1/chat/completions", "/v1/embeddings"})


class GatewayLoad:
    """The gateway's inference slots and waiting line, with counts ``/metrics`` reads."""

    def __init__(
        self,
        max_in_flight: int,
        max_queued: int,
        max_wait_s: float = 1.0,
        retry_after_s: float = 1.0,
    ) -> None:
        self._slots = asyncio.Semaphore(max_in_flight)
        self._max_queued = max_queued
        self._max_wait_s = max_wait_s
        self._retry_after_s = retry_after_s
        self.in_flight = 0
        self.queued = 0
        self.shed = 0

    async def enter(self) -> None:
        """Take a slot, waiting in line if there is room; Overloaded otherwise."""
        if not self._slots.locked():
            await self._slots.acquire()  # a free slot: no wait
        else:
            await self._wait()
        self.in_flight += 1

    async def _wait(self) -> None:
        if self.queued >= self._max_queued:
            raise self._refuse(f"{self.queued} requests are already waiting")
        self.queued += 1
        try:
            async with asyncio.timeout(self._max_wait_s):
                await self._slots.acquire()
        except TimeoutError:
            raise self._refuse(f"no slot freed within {self._max_wait_s:g} s") from None
        finally:
            self.queued -= 1

    def leave(self) -> None:
        self.in_flight -= 1
        self._slots.release()

    def _refuse(self, why: str) -> Overloaded:
        self.shed += 1
        return Overloaded(f"the gateway is overloaded: {why}", retry_after_s=self._retry_after_s)


class LoadShedder:
    """ASGI middleware: inference requests pass through ``load``; everything else freely."""

    def __init__(self, app: ASGIApp, load: GatewayLoad) -> None:
        self.app = app
        self._load = load

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not (
            scope["type"] == "http" and scope["method"] == "POST" and scope["path"] in SHED_PATHS
        ):
            await self.app(scope, receive, send)
            return
        await self._load.enter()
        try:
            await self.app(scope, receive, send)
        finally:
            self._load.leave()
