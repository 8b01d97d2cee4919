"""Rate limits on both caches, and the configured mode when the cache is away."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

import pytest

from hybridinfer.cache.base import Addition, Cache, Counter
from hybridinfer.cache.memory import MemoryCache
from hybridinfer.control.ratelimit import MAX_LEASE, SLACK, SWEEP_S, RateLimiter
from hybridinfer.errors import CacheUnavailable, RateLimited, RateLimitUnavailable
from tests.services import cache, redis_url

__all__ = ["cache", "redis_url"]


async def admitted_at_once(limiters: list[RateLimiter], key: str, requests: int) -> int:
    """How many of ``requests`` concurrent checks, spread over ``limiters``, got through."""

    async def one(index: int) -> bool:
        try:
            await limiters[index % len(limiters)].check(key)
        except RateLimited:
            return False
        return True

    return sum(await asyncio.gather(*(one(index) for index in range(requests))))


async def test_a_limit_holds_across_limiters_sharing_a_cache(cache: Cache) -> None:
    limiters = [RateLimiter(20, cache) for _ in range(3)]  # three replicas
    assert await admitted_at_once(limiters, "key-1", 60) == 20
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


async def test_leases_hold_the_limit_across_replicas_in_fewer_round_trips(cache: Cache) -> None:
    limit = 1_000
    limiters = [RateLimiter(limit, cache, lease=True) for _ in range(3)]
    assert await cache.ping()  # connected before the bursts: a connect timing out is not this
    # Never over; nothing stranded while every replica is busy. Bursts of 300 at once: a
    # burst of thousands can starve the loop past the client's 0.5 s timeouts on a slow host.
    admitted = [await admitted_at_once(limiters, "busy", 300) for _ in range(10)]
    assert sum(admitted) == limit
    assert limiters[0].cache_errors == limiters[1].cache_errors == limiters[2].cache_errors == 0
    assert await cache.read([f"ratelimit:busy:{int(time.time() // 60)}"]) == (float(limit),)
    takes = sum(limiter.takes for limiter in limiters)
    assert takes < limit / 4, takes


async def test_within_the_slack_every_lease_is_one_unit(cache: Cache) -> None:
    limit = SLACK // 5
    limiters = [RateLimiter(limit, cache, lease=True) for _ in range(2)]
    statuses = []
    for index in range(3 * limit):  # one at a time, alternating: what a small limit sees
        try:
            await limiters[index % 2].check("small")
            statuses.append(200)
        except RateLimited:
            statuses.append(429)
    assert statuses == [200] * limit + [429] * (2 * limit)


async def admitted_until_refused(limiter: RateLimiter, key: str) -> int:
    admitted = 0
    while True:
        try:
            await limiter.check(key)
        except RateLimited:
            return admitted
        admitted += 1


async def test_a_lapsed_lease_is_given_back() -> None:
    now = [600.0]
    cache = MemoryCache()
    holder, other = (RateLimiter(SLACK + 10, cache, clock=lambda: now[0], lease=True) for _ in "ab")
    for _ in range(4):  # leases of 1, 2 then 4 units: 4 requests admitted, 3 units held
        await holder.check("k")
        now[0] += 0.001
    assert holder.takes == 3
    now[0] += 1.0  # the holder's lease lapses
    assert await admitted_until_refused(other, "k") == SLACK + 10 - 4 - 3  # not the other's yet
    now[0] += SWEEP_S
    await holder.check("another key")  # the holder's sweep gives them back
    await asyncio.gather(*holder._sweeps)
    assert await admitted_until_refused(other, "k") == 3


async def test_a_lease_grows_to_its_bound_and_ends_with_its_window() -> None:
    now = [600.0]
    limiter = RateLimiter(10**6, MemoryCache(), clock=lambda: now[0], lease=True)
    for _ in range(1_000):
        await limiter.check("k")
    assert limiter.takes < 1_000 // MAX_LEASE + 8
    now[0] = 660.0  # the next window: what the old lease holds is not admitted from
    takes = limiter.takes
    await limiter.check("k")
    assert limiter.takes == takes + 1


class DownCache(MemoryCache):
    """A cache whose server is unreachable."""

    async def add_within(
        self, counters: Sequence[Counter], amount: float, ttl_s: float
    ) -> Addition:
        raise CacheUnavailable("redis unreachable: Connection refused")

    async def take(
        self, key: str, want: int, limit: int, ttl_s: float, give_back: int = 0, slack: int = 0
    ) -> int:
        raise CacheUnavailable("redis unreachable: Connection refused")


@pytest.mark.parametrize("lease", [False, True])
async def test_fail_open_lets_requests_through_and_counts(lease: bool) -> None:
    limiter = RateLimiter(1, DownCache(), mode="fail-open", lease=lease)
    for _ in range(3):
        await limiter.check("k")
    assert limiter.cache_errors == 3


@pytest.mark.parametrize("lease", [False, True])
async def test_fail_closed_refuses_with_503(lease: bool) -> None:
    limiter = RateLimiter(1, DownCache(), mode="fail-closed", lease=lease)
    with pytest.raises(RateLimitUnavailable) as refused:
        await limiter.check("k")
    assert refused.value.status_code == 503
    assert refused.value.headers() == {"Retry-After": "1"}
