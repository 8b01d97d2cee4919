"""Per-key request rate limits: fixed one-minute windows counted in the cache.

With the in-memory cache the counters are this process's; with Redis every replica counts
in the same counters, so a limit of N per minute holds across all of them. The count is one
atomic check-and-add (``Cache.add_within``): a request past the limit is refused and not
counted. When the cache is unreachable, ``mode`` decides: ``fail-open`` lets the request
through (availability first; the failures are counted), ``fail-closed`` refuses it with 503
(the limit first).

Leases (``lease=True``, set where the cache is shared): a replica that asks the cache once per
request pays a round trip and the cache client's work on each. With leases it takes several
units at once (``Cache.take``) and admits from them locally: a lease starts at one unit,
doubles each time the last one was used up within ``LEASE_S``, halves when it was not, and
holds at most ``MAX_LEASE``. Units are counted when taken, so the limit is never exceeded.
While fewer than ``SLACK`` units are left in a window every take is of one unit, as without
leases. What a lease still holds when it lapses is given back with the replica's next take
for that key, or by a sweep at most ``SWEEP_S`` later while the replica serves anything: so
near the limit a request can be refused while another replica holds up to ``MAX_LEASE`` of
the key's units, for about a second. A take the cache refuses is remembered for
``LEASE_S``: a caller past its limit is refused without a round trip.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from hybridinfer.cache.base import Cache, Counter
from hybridinfer.errors import CacheUnavailable, RateLimited, RateLimitUnavailable

log = logging.getLogger(__name__)

WINDOW_S = 60
RateLimitMode = Literal["fail-open", "fail-closed"]
LEASE_S = 0.1
"""How long a lease's units stay this replica's."""
MAX_LEASE = 64
SLACK = 100
"""With this many units or fewer left in a window, every take is of one unit."""
SWEEP_S = 1.0


@dataclass(slots=True)
class _Lease:
    """Units of one key's window taken from the cache and not yet admitted."""

    window: int
    left: int
    size: int
    until: float
    refused: bool = False
    """The last take found the window full."""
    waited: int = 0
    """Requests that waited for the take of this lease."""


@dataclass(slots=True)
class _Flight:
    """A take in flight for one key: its outcome (units, or the cache's error), who waits."""

    done: asyncio.Future[int | CacheUnavailable]
    waiters: int = 0


class RateLimiter:
    """Counts requests per key and window in ``cache``."""

    def __init__(
        self,
        per_minute: int,
        cache: Cache | None = None,
        mode: RateLimitMode = "fail-open",
        clock: Callable[[], float] = time.time,
        lease: bool = False,
    ) -> None:
        if cache is None:
            from hybridinfer.cache.memory import MemoryCache

            cache = MemoryCache()
        self._limit = per_minute
        self._cache = cache
        self._mode = mode
        self._clock = clock
        self._lease = lease
        self._leases: dict[str, _Lease] = {}
        self._next_sweep = 0.0
        self._sweeps: set[asyncio.Task[None]] = set()
        self._flights: dict[str, _Flight] = {}
        self.cache_errors = 0
        """Checks that found the cache unreachable (exported as a metric)."""
        self.takes = 0
        """Leases taken from the cache (with ``lease``)."""

    async def check(self, key: str, limit: int | None = None) -> None:
        """Count one request for ``key``; RateLimited (with Retry-After) past the limit."""
        allowed = limit or self._limit
        now = self._clock()
        window = int(now // WINDOW_S)
        try:
            if self._lease:
                granted = await self._leased(key, allowed)
            else:
                counter = Counter(f"ratelimit:{key}:{window}", float(allowed))
                addition = await self._cache.add_within([counter], 1.0, WINDOW_S * 2)
                granted = addition.granted
        except CacheUnavailable as exc:
            self._unavailable(exc)
            return
        if not granted:
            raise RateLimited(
                f"rate limit of {allowed} requests per minute reached",
                retry_after_s=WINDOW_S - now % WINDOW_S,
            )

    def _unavailable(self, exc: CacheUnavailable) -> None:
        """The configured mode's answer to an unreachable cache."""
        self.cache_errors += 1
        if self._mode == "fail-closed":
            raise RateLimitUnavailable(
                "rate limiting is unavailable (its cache is unreachable); retry shortly"
            ) from None
        if self.cache_errors % 100 == 1:
            log.warning("rate limit cache unreachable, letting requests through: %s", exc)

    async def _leased(self, key: str, allowed: int) -> bool:
        """Admit one request for ``key`` from its lease, taking a new one when it is spent.
        One take per key is in flight at a time: requests arriving meanwhile wait for it,
        and the next take asks for as many units as waited."""
        while True:
            now = self._clock()
            window = int(now // WINDOW_S)
            held = self._leases.get(key)
            if held is not None and held.window == window and now < held.until:
                if held.left:
                    held.left -= 1
                    return True
                if held.refused:
                    return False
            flight = self._flights.get(key)
            if flight is None:
                break
            flight.waiters += 1
            outcome = await asyncio.shield(flight.done)
            if isinstance(outcome, CacheUnavailable):
                raise outcome
        flight = _Flight(asyncio.get_running_loop().create_future())
        self._flights[key] = flight
        try:
            granted = await self._take(key, allowed, now, window, held, flight)
            flight.done.set_result(granted)
        except CacheUnavailable as exc:
            flight.done.set_result(exc)
            raise
        finally:
            del self._flights[key]
            if not flight.done.done():  # cancelled: the waiters take for themselves
                flight.done.set_result(0)
        return granted > 0

    async def _take(
        self,
        key: str,
        allowed: int,
        now: float,
        window: int,
        held: _Lease | None,
        flight: _Flight,
    ) -> int:
        """A new lease for ``key`` (one unit of it admitted now); the units taken."""
        if now >= self._next_sweep:
            self._sweep(now)
        size, give_back = 1, 0
        if held is not None:
            used_up = held.left == 0 and now < held.until
            size = min(held.size * 2, MAX_LEASE) if used_up else max(held.size // 2, 1)
            if held.window == window:
                give_back, held.left = held.left, 0
        size = max(size, min(held.waited if held else 0, MAX_LEASE))
        self.takes += 1
        granted = await self._cache.take(
            f"ratelimit:{key}:{window}", size, allowed, WINDOW_S * 2, give_back, SLACK
        )
        # Refused: remembered for LEASE_S, so a caller past its limit costs no round trip.
        lease = _Lease(window, max(granted - 1, 0), size, now + LEASE_S, refused=not granted)
        lease.waited = flight.waiters
        self._leases[key] = lease
        return granted

    def _sweep(self, now: float) -> None:
        """Give back what lapsed leases hold, in the background; forget old windows."""
        self._next_sweep = now + SWEEP_S
        window = int(now // WINDOW_S)
        lapsed = []
        for key, held in list(self._leases.items()):
            if held.window != window:
                del self._leases[key]
            elif held.left and now >= held.until:
                lapsed.append((f"ratelimit:{key}:{window}", held.left))
                held.left = 0
        if lapsed:
            task = asyncio.get_running_loop().create_task(self._give_back(lapsed))
            self._sweeps.add(task)
            task.add_done_callback(self._sweeps.discard)

    async def _give_back(self, lapsed: list[tuple[str, int]]) -> None:
        for counter, units in lapsed:
            try:
                await self._cache.take(counter, 0, 0, WINDOW_S * 2, units)
            except CacheUnavailable:
                return  # the window's count stays high: refusals come early, never late
