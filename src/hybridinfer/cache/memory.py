"""The in-process cache (the embedded default): right for one replica.

Every method runs without awaiting, so on one event loop each call is atomic.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from hybridinfer.cache.base import EPSILON, Addition, Cache, Counter, units_to_take


class MemoryCache(Cache):
    """A dict with expiry; expired entries are dropped as they are met and on sweeps."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, max_entries: int = 100_000):
        self._clock = clock
        self._max_entries = max_entries
        self._values: dict[str, tuple[bytes | float, float | None]] = {}

    def _live(self, key: str) -> bytes | float | None:
        entry = self._values.get(key)
        if entry is None:
            return None
        value, expires = entry
        if expires is not None and expires <= self._clock():
            del self._values[key]
            return None
        return value

    def _sweep(self) -> None:
        if len(self._values) < self._max_entries:
            return
        now = self._clock()
        self._values = {
            key: entry for key, entry in self._values.items() if entry[1] is None or entry[1] > now
        }

    def _expiry(self, ttl_s: float | None) -> float | None:
        return None if ttl_s is None else self._clock() + ttl_s

    async def get(self, key: str) -> bytes | None:
        value = self._live(key)
        return value if isinstance(value, bytes) else None

    async def set(self, key: str, value: bytes, ttl_s: float | None = None) -> None:
        self._sweep()
        self._values[key] = (value, self._expiry(ttl_s))

    async def delete(self, key: str) -> None:
        self._values.pop(key, None)

    def _number(self, key: str) -> float:
        value = self._live(key)
        return value if isinstance(value, float) else 0.0

    async def add_within(
        self, counters: Sequence[Counter], amount: float, ttl_s: float
    ) -> Addition:
        current = [self._number(counter.key) for counter in counters]
        fits = all(
            counter.limit is None or value + amount <= counter.limit + EPSILON
            for counter, value in zip(counters, current, strict=True)
        )
        if not fits:
            return Addition(False, tuple(current))
        self._sweep()
        for counter, value in zip(counters, current, strict=True):
            expires = self._values[counter.key][1] if counter.key in self._values else None
            self._values[counter.key] = (value + amount, expires or self._expiry(ttl_s))
        return Addition(True, tuple(value + amount for value in current))

    async def take(
        self, key: str, want: int, limit: int, ttl_s: float, give_back: int = 0, slack: int = 0
    ) -> int:
        current = max(0.0, self._number(key) - give_back)
        granted = units_to_take(current, want, limit, slack)
        if key in self._values or granted:
            self._sweep()
            expires = self._values[key][1] if key in self._values else None
            self._values[key] = (current + granted, expires or self._expiry(ttl_s))
        return granted

    async def read(self, keys: Sequence[str]) -> tuple[float, ...]:
        return tuple(self._number(key) for key in keys)

    async def ping(self) -> bool:
        return True
