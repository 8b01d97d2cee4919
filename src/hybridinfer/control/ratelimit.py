"""Per-key request rate limits: fixed one-minute windows counted in the cache.

With the in-memory cache the counters are this process's; with Redis every replica counts
in the same counters, so a limit of N per minute holds across all of them. The count is one
atomic check-and-add (``Cache.add_within``): a request past the limit is refused and not
counted. When the cache is unreachable, ``mode`` decides: ``fail-open`` lets the request
through (availability first; the failures are counted), ``fail-closed`` refuses it with 503
(the limit first).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Literal

from hybridinfer.cache.base import Cache, Counter
from hybridinfer.errors import CacheUnavailable, RateLimited, RateLimitUnavailable

log = logging.getLogger(__name__)

WINDOW_S = 60
RateLimitMode = Literal["fail-open", "fail-closed"]


class RateLimiter:
    """Counts requests per key and window in ``cache``."""

    def __init__(
        self,
        per_minute: int,
        cache: Cache | None = None,
        mode: RateLimitMode = "fail-open",
        clock: Callable[[], float] = time.time,
    ) -> None:
        if cache is None:
            from hybridinfer.cache.memory import MemoryCache

            cache = MemoryCache()
        self._limit = per_minute
        self._cache = cache
        self._mode = mode
        self._clock = clock
        self.cache_errors = 0
        """Checks that found the cache unreachable (exported as a metric)."""

    async def check(self, key: str, limit: int | None = None) -> None:
        """Count one request for ``key``; RateLimited (with Retry-After) past the limit."""
        allowed = limit or self._limit
        now = self._clock()
        window = int(now // WINDOW_S)
        counter = Counter(f"ratelimit:{key}:{window}", float(allowed))
        try:
            addition = await self._cache.add_within([counter], 1.0, WINDOW_S * 2)
        except CacheUnavailable as exc:
            self.cache_errors += 1
            if self._mode == "fail-closed":
                raise RateLimitUnavailable(
                    "rate limiting is unavailable (its cache is unreachable); retry shortly"
                ) from None
            if self.cache_errors % 100 == 1:
                log.warning("rate limit cache unreachable, letting requests through: %s", exc)
            return
        if not addition.granted:
            raise RateLimited(
                f"rate limit of {allowed} requests per minute reached",
                retry_after_s=WINDOW_S - now % WINDOW_S,
            )
