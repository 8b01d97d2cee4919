"""The interface every cache implements (in-memory, Redis).

A cache holds short-lived values shared by the gateway replicas: rate-limit counters, spend
counters and hot context. Counters move only through ``add_within``, one atomic
check-and-add over several keys, and ``take``, one atomic give-back-and-take of whole units
on one key: replicas racing for the last unit of a limit get exactly what fits. Keys are
plain strings; implementations prefix them (``prefix``) so that several deployments can
share one server.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Counter:
    """One counter of an ``add_within``: its key and the most it may reach (None: no bound)."""

    key: str
    limit: float | None = None


@dataclass(frozen=True, slots=True)
class Addition:
    """What ``add_within`` did: whether it added, and every counter's value afterwards."""

    granted: bool
    values: tuple[float, ...]


class Cache(ABC):
    """Bytes and counters by key, with expiry. Implementations map their dependency's errors
    into ``CacheUnavailable``."""

    @abstractmethod
    async def get(self, key: str) -> bytes | None:
        """The value under ``key``, or None when absent or expired."""

    @abstractmethod
    async def set(self, key: str, value: bytes, ttl_s: float | None = None) -> None:
        """Store ``value`` under ``key``, expiring after ``ttl_s`` seconds (None: never)."""

    @abstractmethod
    async def delete(self, key: str) -> None:
        """Remove ``key`` (no error if it is already gone)."""

    @abstractmethod
    async def add_within(
        self, counters: Sequence[Counter], amount: float, ttl_s: float
    ) -> Addition:
        """Atomically add ``amount`` to every counter if each stays within its limit, else
        add nothing. A counter created here expires ``ttl_s`` seconds later."""

    @abstractmethod
    async def take(
        self, key: str, want: int, limit: int, ttl_s: float, give_back: int = 0, slack: int = 0
    ) -> int:
        """Atomically give back ``give_back`` units of counter ``key`` (not below 0), then add
        and return up to ``want`` units that fit under ``limit``: all ``want`` while that
        leaves ``slack`` units free, else as many as leave ``slack`` free, but at least one
        while one fits. 0: nothing fits (``want`` 0 only gives back). A counter created here
        expires ``ttl_s`` seconds later."""

    @abstractmethod
    async def read(self, keys: Sequence[str]) -> tuple[float, ...]:
        """Current values of counters (0 for absent ones)."""

    @abstractmethod
    async def ping(self) -> bool:
        """Whether the cache answers."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release connections."""


def units_to_take(current: float, want: int, limit: int, slack: int) -> int:
    """What ``Cache.take`` grants a counter at ``current`` (the Redis script does the same)."""
    room = int(limit - current)
    if room < 1 or want < 1:
        return 0
    return min(want, max(1, room - slack))


EPSILON = 1e-9
"""Tolerance of limit checks: money adds up in binary floating point."""
