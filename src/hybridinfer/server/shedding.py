"""Load shedding at the gateway: a bound on requests running and waiting, 503 past it.

Inference requests (``POST`` to the paths that run models) hold one of ``max_in_flight``
slots while they run; up to ``max_queued`` more wait for a slot, at most ``max_wait_s``. A
request whose expected wait is already past ``max_wait_s`` (the requests ahead of it times the
smoothed time a request holds its slot, over the slots) does not queue at all: it would only be
refused later, after holding a connection and the event loop's time. Past any bound the
request is answered at once with 503 ``overloaded`` and ``Retry-After``,
before its body is read, so memory stays bounded however hard the gateway is pushed.

Slots bound memory, not CPU: with a fast upstream the event loop runs out of CPU long before
its slots fill, and past that point every request let in makes all the running ones later
(at twice the peak, answered requests waited ~300 ms). So while requests run, ``LoopBusy``
reads every ``BUSY_WINDOW_S`` the share of the loop thread's time it had work: on a CPU or
waiting in the run queue for one (``ThreadDemand``, Linux's schedstat). While that is over
``max_busy`` it lowers the number of requests let run at once (to no fewer than
``busy_floor``); once the loop has time to spare the limit grows back to ``max_in_flight``
(additive increase, multiplicative decrease, as TCP's window). It reads the loop's own
demand, not latency, so a slow upstream (slots held while waiting, the loop idle) is never
taken for overload. It counts the run queue because on a host whose other processes take
the cores the loop's CPU share stops short of the bound while it has no time to spare, and
requests wait in line instead of being refused: on 2 cores with one process spinning beside
the gateway and the load generator, 480 requests a second offered, the CPU share bound
answered 428 and 444 a second at p99 584 and 589 ms (two 30 s runs), this one 425 and 410 at
p99 40 and 44 ms. Without that rival both answered ~540 of 640 at p99 25-30 ms.
While the limit is under ``max_in_flight`` a request past it is refused at once, never
queued: a wait would only add to a loop already behind.

The shedder is the first step of the gateway's front door (``gateway/frontdoor.py``), before
the request id, the access log and the error envelope: a refusal must cost a small fraction of
an answer, or a gateway past its peak spends its CPU refusing. It renders the same answer those
steps would (the envelope, the caller's ``X-Request-ID`` echoed or a new one, ``Retry-After``)
from pre-encoded headers, and refusals are logged as one ``hybridinfer.access`` line per second
at most with their count, not one each (``hybridinfer_overloaded_total{where="gateway"}``
counts every one). Health, metrics, node registration and heartbeats, and the admin API are
never shed: under overload the gateway must still see its nodes and answer its probes.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

import orjson
from starlette.types import ASGIApp, Receive, Scope, Send

from hybridinfer.errors import Overloaded
from hybridinfer.server.responses import new_request_id, valid_request_id

access_log = logging.getLogger("hybridinfer.access")

Refusal = tuple[list[tuple[bytes, bytes]], bytes]
"""A 503 answer: its headers (without the server's own) and its body."""

SHED_PATHS = frozenset({"/v1/infer", "/v1/tasks", "/v1/chat/completions", "/v1/embeddings"})


LOG_EVERY_S = 1.0
"""Refusals are logged as one line per this many seconds at most, with their count."""
SERVICE_ALPHA = 0.1
"""Weight of the newest request in the smoothed time a request holds its slot."""
BUSY_WINDOW_S = 0.05
"""How often, while requests run, the loop thread's busy share is read."""
BUSY_ALPHA = 0.3
"""Weight of the newest window in the smoothed busy share."""
BUSY_DECREASE = 0.9
"""Factor on the limit for each window the loop is busier than its bound."""
BUSY_RELEASE = 0.1
"""The limit grows again once the loop is this far under its bound."""


SCHEDSTAT = "/proc/thread-self/schedstat"
"""Per thread: nanoseconds on a CPU, nanoseconds waiting in the run queue, time slices."""


class ThreadDemand:
    """Seconds the calling thread has spent on a CPU or waiting in the run queue for one (its
    schedstat, ~7 µs a read); its CPU time alone (``time.thread_time``) where the kernel does
    not keep schedstat."""

    def __init__(self, path: str = SCHEDSTAT) -> None:
        self._path = path
        self._readable = True

    def __call__(self) -> float:
        if self._readable:
            try:
                with open(self._path, "rb") as stat:
                    running_ns, waiting_ns, _slices = stat.read().split()
                return (int(running_ns) + int(waiting_ns)) / 1e9
            except (OSError, ValueError):
                self._readable = False
        return time.thread_time()


class LoopBusy:
    """The share of its time the event loop thread has work (on a CPU or waiting for one)
    while requests run, and the number of requests let run at once that holds it near
    ``max_busy``: lowered by ``BUSY_DECREASE`` each window the loop is busier, raised by an
    eighth each window it has time to spare (AIMD). The probe is a loop timer armed by the
    first request and left to lapse once nothing runs and the limit is back at ``ceiling``: an
    idle gateway never wakes for it."""

    def __init__(
        self,
        max_busy: float,
        floor: int,
        ceiling: int,
        running: Callable[[], int],
        *,
        cpu_clock: Callable[[], float] | None = None,
    ) -> None:
        """``cpu_clock``: seconds of the loop thread's demand so far (``ThreadDemand`` by
        default)."""
        self.max_busy = max_busy
        self._floor = min(floor, ceiling)
        self._ceiling = ceiling
        self._running = running
        self._cpu_clock = ThreadDemand() if cpu_clock is None else cpu_clock
        self.busy = 0.0
        """Smoothed share of the loop thread's time with work (0 while idle)."""
        self.limit = ceiling
        """Requests let run at once now."""
        self._probe: asyncio.TimerHandle | None = None
        self._since = (0.0, 0.0)

    def admits(self, running: int) -> bool:
        """Whether a new request may run, ``running`` running already; arms the probe."""
        if self._probe is None:
            loop = asyncio.get_running_loop()
            self._since = (loop.time(), self._cpu_clock())
            self._probe = loop.call_later(BUSY_WINDOW_S, self._sample, loop)
        # At the ceiling the slots decide (a request may wait for one); under it, refused.
        return self.limit >= self._ceiling or running < self.limit

    def observe(self, busy: float) -> None:
        """One window's CPU share: the smoothed share and the limit move with it."""
        self.busy += BUSY_ALPHA * (busy - self.busy)
        if self.busy > self.max_busy:
            running = max(self._running(), self._floor)
            self.limit = max(self._floor, int(min(self.limit, running) * BUSY_DECREASE))
        elif self.busy < self.max_busy - BUSY_RELEASE:
            self.limit = min(self._ceiling, self.limit + max(1, self.limit // 8))

    def _sample(self, loop: asyncio.AbstractEventLoop) -> None:
        now, cpu = loop.time(), self._cpu_clock()
        then, cpu_then = self._since
        self.observe((cpu - cpu_then) / max(now - then, 1e-6))
        if self._running() or self.limit < self._ceiling:
            self._since = (now, cpu)
            self._probe = loop.call_later(BUSY_WINDOW_S, self._sample, loop)
        else:  # idle: the next request starts a fresh reading
            self._probe, self.busy = None, 0.0

    def stop(self) -> None:
        if self._probe is not None:
            self._probe.cancel()
            self._probe = None


class GatewayLoad:
    """The gateway's inference slots and waiting line, with counts ``/metrics`` reads."""

    def __init__(
        self,
        max_in_flight: int,
        max_queued: int,
        max_wait_s: float = 1.0,
        retry_after_s: float = 1.0,
        max_busy: float = 0.0,
        busy_floor: int = 8,
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
        self.cpu = (
            LoopBusy(max_busy, busy_floor, max_in_flight, lambda: self.in_flight + self.queued)
            if max_busy
            else None
        )
        """The CPU bound (None: off)."""

    def refusal(self) -> Overloaded | None:
        """The refusal of a request that arrives now, if it would be refused without waiting
        (counted as shed), or None if it may run or wait in line. ``enter`` asks it first; the
        server's protocol asks it alone, to refuse before the request becomes an ASGI task."""
        if self.cpu is not None and not self.cpu.admits(self.in_flight):
            return self._refuse(
                f"its event loop is {self.cpu.busy:.0%} busy with {self.in_flight} requests"
            )
        if not self._slots.locked():
            return None
        if self.queued >= self._max_queued:
            return self._refuse(f"{self.queued} requests are already waiting")
        expected = self.expected_wait_s()
        if expected > self._max_wait_s:
            return self._refuse(f"a slot is expected in {expected:.1f} s")
        return None

    async def enter(self) -> float:
        """Take a slot, waiting in line if there is room; Overloaded otherwise. Returns the
        monotonic time the slot was taken, for ``leave``."""
        refused = self.refusal()
        if refused is not None:
            raise refused
        if not self._slots.locked():
            await self._slots.acquire()  # a free slot: no wait
        else:
            await self._wait()
        self.in_flight += 1
        return time.monotonic()

    @property
    def busy(self) -> float:
        """Smoothed share of the loop thread's time on CPU while requests run (0: idle or off)."""
        return self.cpu.busy if self.cpu is not None else 0.0

    @property
    def limit(self) -> int:
        """Inference requests let run at once now (below max_in_flight while the loop is busy)."""
        return self.cpu.limit if self.cpu is not None else self._max_in_flight

    def expected_wait_s(self) -> float:
        """How long a request that joins the line now should wait for a slot."""
        if self.service_s is None:
            return 0.0
        return (self.queued + 1) * self.service_s / self._max_in_flight

    async def _wait(self) -> None:
        """Wait in line for a slot (``refusal`` has found room in the line)."""
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
    """Outermost ASGI layer: inference requests pass through ``load``; everything else freely.
    A refusal is answered here, without the layers inside."""

    def __init__(self, app: ASGIApp, load: GatewayLoad) -> None:
        self.app = app
        self._load = load
        self._unlogged = 0
        self._logged_at = float("-inf")  # the first refusal is logged at once

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self.sheds(scope):
            await self.app(scope, receive, send)
            return
        entered = await self.enter(scope, send)
        if entered is None:
            return
        try:
            await self.app(scope, receive, send)
        finally:
            self.leave(entered)

    @staticmethod
    def sheds(scope: Scope) -> bool:
        """Whether the request is one that must hold a slot (an inference ``POST``)."""
        return scope["type"] == "http" and scope["method"] == "POST" and scope["path"] in SHED_PATHS

    async def enter(self, scope: Scope, send: Send) -> float | None:
        """Take a slot for the request (``leave`` gives it back), or refuse it: answered here
        with 503, and None."""
        # The request's clock starts before its wait for a slot (the request id keeps it).
        scope.setdefault("state", {})["started"] = time.perf_counter()
        try:
            return await self._load.enter()
        except Overloaded as refused:
            await self._refuse(scope, send, refused)
            return None

    def leave(self, entered: float) -> None:
        """Give back the slot ``enter`` took."""
        self._load.leave(entered)

    def refuse_now(self, scope: Scope) -> Refusal | None:
        """The 503 of an inference request that would be refused without waiting, counted
        and logged as ``enter`` would, or None: the server's protocol asks this before the
        request becomes an ASGI task (``server/serving.py``), the cheapest place to refuse."""
        if not self.sheds(scope):
            return None
        refused = self._load.refusal()
        return None if refused is None else self.refusal(scope, refused)

    def refusal(self, scope: Scope, refused: Overloaded) -> Refusal:
        """The 503 answer of ``refused`` (headers and the error envelope), logged."""
        given = None
        for name, value in scope["headers"]:
            if name == b"x-request-id":
                given = value.decode("latin-1")
                break
        request_id = given if given is not None and valid_request_id(given) else new_request_id()
        body = orjson.dumps(
            {
                "error": {
                    "code": refused.error_code,
                    "message": refused.message,
                    "request_id": request_id,
                }
            }
        )
        headers = [
            *_REFUSAL_HEADERS,
            (b"retry-after", refused.headers()["Retry-After"].encode()),
            (b"content-length", b"%d" % len(body)),
            (b"x-request-id", request_id.encode()),
        ]
        self._log(scope)
        return headers, body

    async def _refuse(self, scope: Scope, send: Send, refused: Overloaded) -> None:
        headers, body = self.refusal(scope, refused)
        await send({"type": "http.response.start", "status": 503, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    def _log(self, scope: Scope) -> None:
        """One access line a second at most, with the count of refusals since the last."""
        self._unlogged += 1
        now = time.monotonic()
        if now - self._logged_at >= LOG_EVERY_S:
            access_log.info(
                "%s %s %d (%d refused since the last such line)",
                scope["method"],
                scope["path"],
                503,
                self._unlogged,
                extra={"status": 503, "refused": self._unlogged},
            )
            self._unlogged, self._logged_at = 0, now


_REFUSAL_HEADERS = ((b"content-type", b"application/json"),)
