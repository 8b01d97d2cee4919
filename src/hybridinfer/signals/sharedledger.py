"""The shared ledger: spend counted in the cache (Redis), the same for every replica.

A reservation is one ``Cache.add_within`` over two counters (global and per key) with their
limits: on Redis one Lua script checks both and adds to both, or adds nothing. Counters are
keyed by period (``budget:global:day:20412``), so a new period starts at zero and the old
counters expire by themselves.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from hybridinfer.cache.base import Cache, Counter
from hybridinfer.errors import CacheUnavailable
from hybridinfer.policy.document import BudgetPolicy
from hybridinfer.signals.budget import PERIOD_SECONDS, BudgetState, Ledger

log = logging.getLogger(__name__)


class CacheLedger(Ledger):
    """Spend counters in a ``Cache``; ``state`` answers from the last values seen.

    When the cache is unreachable a reservation is refused (spend is money: fail closed),
    so the router falls back to free tiers or reports the budget as exhausted.
    """

    def __init__(self, cache: Cache, clock: Callable[[], float] = time.time) -> None:
        self._cache = cache
        self._clock = clock
        self._seen: dict[str, float] = {}

    def _keys(self, key_id: str | None, policy: BudgetPolicy) -> tuple[str, str]:
        window = int(self._clock() // PERIOD_SECONDS[policy.period])
        period = f"{policy.period}:{window}"
        return f"budget:global:{period}", f"budget:key:{key_id or ''}:{period}"

    def state(self, key_id: str | None, policy: BudgetPolicy) -> BudgetState:
        global_key, own_key = self._keys(key_id, policy)
        return BudgetState(
            self._seen.get(global_key, 0.0),
            self._seen.get(own_key, 0.0),
            policy.global_limit,
            policy.per_key_limit,
        )

    def _remember(self, keys: tuple[str, ...], values: tuple[float, ...]) -> None:
        if len(self._seen) > 10_000:
            self._seen.clear()
        self._seen.update(zip(keys, values, strict=True))

    async def reserve(self, key_id: str | None, amount: float, policy: BudgetPolicy) -> bool:
        if amount <= 0.0:
            return True
        keys = self._keys(key_id, policy)
        counters = [Counter(keys[0], policy.global_limit), Counter(keys[1], policy.per_key_limit)]
        ttl_s = PERIOD_SECONDS[policy.period] * 2
        try:
            addition = await self._cache.add_within(counters, amount, ttl_s)
        except CacheUnavailable as exc:
            log.warning("budget cache unreachable, refusing paid call: %s", exc.message)
            return False
        self._remember(keys, addition.values)
        return addition.granted

    async def refund(self, key_id: str | None, amount: float, policy: BudgetPolicy) -> None:
        keys = self._keys(key_id, policy)
        ttl_s = PERIOD_SECONDS[policy.period] * 2
        try:
            addition = await self._cache.add_within([Counter(k) for k in keys], -amount, ttl_s)
        except CacheUnavailable as exc:
            log.warning("budget cache unreachable, refund of %s lost: %s", amount, exc.message)
            return
        self._remember(keys, addition.values)

    async def refresh(self, policy: BudgetPolicy) -> None:
        keys = self._keys(None, policy)[:1]
        try:
            self._remember(keys, await self._cache.read(keys))
        except CacheUnavailable:
            return
