"""Budgets shared by replicas: the ledger on the cache reserves atomically, on both caches."""

from __future__ import annotations

import asyncio

from hybridinfer.cache.base import Cache
from hybridinfer.policy.document import BudgetPolicy
from hybridinfer.signals.sharedledger import CacheLedger
from tests.services import cache, redis_url

__all__ = ["cache", "redis_url"]


async def test_replicas_racing_for_a_budget_get_exactly_what_fits(cache: Cache) -> None:
    policy = BudgetPolicy(global_limit=10 * 0.0002 + 1e-9)
    replicas = [CacheLedger(cache) for _ in range(3)]  # three gateways, one cache
    granted = await asyncio.gather(
        *(replicas[index % 3].reserve("k", 0.0002, policy) for index in range(50))
    )
    assert sum(granted) == 10
    await replicas[0].refund("k", 0.0002, policy)
    assert await replicas[1].reserve("k", 0.0002, policy)
    await replicas[2].refresh(policy)
    state = replicas[2].state("k", policy)
    assert abs(state.spent_global - 10 * 0.0002) < 1e-9
    assert state.room() < 0.0002


async def test_the_per_key_limit_holds_across_replicas(cache: Cache) -> None:
    policy = BudgetPolicy(per_key_limit=0.0005)
    first, second = CacheLedger(cache), CacheLedger(cache)
    assert await first.reserve("a", 0.0002, policy)
    assert await second.reserve("a", 0.0002, policy)
    assert not await first.reserve("a", 0.0002, policy)
    assert await second.reserve("b", 0.0002, policy)
