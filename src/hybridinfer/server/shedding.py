"""Load shedding at the gateway: a bound on requests running and waiting, 503 past it.

Inference requests (``POST`` to the paths that run models) hold one of ``max_in_flight``
slots while they run; up to ``max_queued`` more wait for a slot, at most ``max_wait_s``. A
request whose expected wait is already past ``max_wait_s`` (the requests ahead of it times the
smoothed time a request holds its slot, over the slots) does not queue at all: it would only be
refused later, after holding a connection and the event loop's time. Past any bound the
request is answered at once with 503 ``overloaded`` and ``Retry-After``,
before its body is read, so memory stays bounded however hard the gateway is pushed. Health,
metrics, node registration and heartbeats, and the admin API are never shed: under overload
the gateway must still see its nodes and answer its probes.
"""

from __future__ import annotations

import asyncio
import time

from starlette.types import ASGIApp, Receive, Scope, Send

from hybridinfer.errors import Overloaded

SHED_PATHS = frozenset({"/v1/infer", "/v1/tasks", "/v1/chat/completions", "/v1/embeddings"})


SERVICE_ALPHA = 0.1
"""Weight of the newest request in the smoothed time a request holds its slot."""


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
        self._max_in_flight = max_in_flight
        self._max_queued = max_queued
        self._max_wait_s = max_wait_s
        self._retry_after_s = retry_after_s
        self.in_flight = 0
        self.queued = 0
        self.shed = 0
        self.service_s: float | None = None
        """Smoothed seconds a request holds its slot (None until one has left)."""

    async def enter(self) -> float:
        """Take a slot, waiting in line if there is room; Overloaded otherwise. Returns the
        monotonic time the slot was taken, for ``leave``."""
        if not self._slots.locked():
            await self._slots.acquire()  # a free slot: no wait
        else:
            await self._wait()
        self.in_flight += 1
        return time.monotonic()

    def expected_wait_s(self) -> float:
        """How long a request that joins the line now should wait for a slot."""
        if self.service_s is None:
            return 0.0
        return (self.queued + 1) * self.service_s / self._max_in_flight

    async def _wait(self) -> None:
        if self.queued >= self._max_queued:
            raise self._refuse(f"{self.queued} requests are already waiting")
        expected = self.expected_wait_s()
        if expected > self._max_wait_s:
            raise self._refuse(f"a slot is expected in {expected:.1f} s")
        self.queued += 1
        try:
            async with asyncio.timeout(self._max_wait_s):
                await self._slots.acquire()
        except TimeoutError:
            raise self._refuse(f"no slot freed within {self._max_wait_s:g} s") from None
        finally:
            self.queued -= 1

    def leave(self, entered: float) -> None:
        """Give back the slot taken at ``entered`` (``enter``'s answer)."""
        held = time.monotonic() - entered
        previous = self.service_s
        self.service_s = held if previous is None else previous + SERVICE_ALPHA * (held - previous)
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
        entered = await self._load.enter()
        try:
            await self.app(scope, receive, send)
        finally:
            self._load.leave(entered)
