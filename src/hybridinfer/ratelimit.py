"""Per-key request rate limits (fixed one-minute windows)."""

from __future__ import annotations

import time
from collections.abc import Callable

from hybridinfer.errors import RateLimited


class RateLimiter:
    """In-memory counters: right for one process; replicas share counters in a cache."""

    def __init__(self, per_minute: int, clock: Callable[[], float] = time.time) -> None:
        self._limit = per_minute
        self._clock = clock
        self._window = -1
        self._counts: dict[str, int] = {}

    def check(self, key: str, limit: int | None = None) -> None:
        """Count one request for ``key``; RateLimited (with Retry-After) past the limit."""
        now = self._clock()
        window = int(now // 60)
        if window != self._window:
            self._window = window
            self._counts = {}
        count = self._counts.get(key, 0) + 1
        self._counts[key] = count
        if count > (limit or self._limit):
            raise RateLimited(
                f"rate limit of {limit or self._limit} requests per minute reached",
                retry_after_s=60 - now % 60,
            )
