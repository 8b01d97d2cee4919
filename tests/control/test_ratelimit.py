"""Rate limits on both caches, and the configured mode when the cache is away."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from hybridinfer.cache.base import Addition, Cache, Counter
from hybridinfer.cache.memory import MemoryCache
from hybridinfer.control.ratelimit import RateLimiter
from hybridinfer.errors import CacheUnavailable, RateLimited, RateLimitUnavailable
from tests.services import cache, redis_url

__all__ = ["cache", "redis_url"]


async def test_a_limit_holds_across_limiters_sharing_a_cache(cache: Cache) -> None:
    limiters = [RateLimiter(20, cache) for _ in range(3)]  # three replicas

    async def one(index: int) -> bool:
        try:
            await limiters[index % 3].check("key-1")
        except RateLimited:
            return False
        return True

    allowed = await asyncio.gather(*(one(index) for index in range(60)))
    assert sum(allowed) == 20
    await limiters[0].check("key-2")  # other keys have their own count


async def test_the_window_resets_each_minute() -> None:
    now = [120.0]
    limiter = RateLimiter(1, MemoryCache(), clock=lambda: now[0])
    await limiter.check("k")
    with pytest.raises(RateLimited) as refused:
        await limiter.check("k")
    assert refused.value.headers() == {"Retry-After": "60"}
    now[0] = 180.5
    await limiter.check("k")


class DownCache(MemoryCache):
    """A cache whose server is unreachable."""

    async def add_within(
        self, counters: Sequence[Counter], amount: float, ttl_s: float
    ) -> Addition:
        raise CacheUnavailable("redis unreachable: Connection refused")


async def test_fail_open_lets_requests_through_and_counts() -> None:
    limiter = RateLimiter(1, DownCache(), mode="fail-open")
    for _ in range(3):
        await limiter.check("k")
    assert limiter.cache_errors == 3


async def test_fail_closed_refuses_with_503() -> None:
    limiter = RateLimiter(1, DownCache(), mode="fail-closed")
    with pytest.raises(RateLimitUnavailable) as refused:
        await limiter.check("k")
    assert refused.value.status_code == 503
    assert refused.value.headers() == {"Retry-After": "1"}
