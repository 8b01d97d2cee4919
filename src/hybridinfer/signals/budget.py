"""Cloud spend per period, globally and per API key, reserved atomically before each call.

Reserving before the call (not recording after it) is what keeps a budget from overshooting
when requests race: 50 concurrent requests against room for 10 calls get exactly 10
reservations. The in-memory ledger is atomic because the event loop runs one reservation at a
time; the shared ledger (``CacheLedger`` on Redis) does the same check-and-add in one atomic
script on the server, so replicas racing for the last of a budget get exactly what fits.

``state`` is synchronous (the router reads it while planning, many times per request): the
shared ledger answers it from a snapshot refreshed by every reservation and by ``refresh``
(called about once a second). The snapshot only steers routing; ``reserve`` is the gate.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass

from hybridinfer.policy.document import BudgetPolicy

PERIOD_SECONDS = {"minute": 60, "hour": 3600, "day": 86_400, "month": 30 * 86_400}


@dataclass(frozen=True, slots=True)
class BudgetState:
    """What is left for one caller in the current period."""

    spent_global: float
    spent_key: float
    limit_global: float | None
    limit_key: float | None

    def room(self) -> float:
        """The largest call cost that still fits (inf when unlimited)."""
        rooms = [float("inf")]
        if self.limit_global is not None:
            rooms.append(self.limit_global - self.spent_global)
        if self.limit_key is not None:
            rooms.append(self.limit_key - self.spent_key)
        return max(0.0, min(rooms))

    def signals(self) -> dict[str, float]:
        """The ``budget`` map policy conditions see (global figures; 0 limit = unlimited)."""
        limit = self.limit_global or 0.0
        return {
            "spent": self.spent_global,
            "limit": limit,
            "remaining": max(0.0, limit - self.spent_global) if limit else 0.0,
            "fraction": self.spent_global / limit if limit else 0.0,
        }


class Ledger(ABC):
    """Where spend is counted."""

    @abstractmethod
    def state(self, key_id: str | None, policy: BudgetPolicy) -> BudgetState:
        """Spend so far in the current period."""

    @abstractmethod
    async def reserve(self, key_id: str | None, amount: float, policy: BudgetPolicy) -> bool:
        """Add ``amount`` if it fits both limits; False (and nothing added) if it does not."""

    @abstractmethod
    async def refund(self, key_id: str | None, amount: float, policy: BudgetPolicy) -> None:
        """Give back a reservation whose call did not happen."""

    async def refresh(self, policy: BudgetPolicy) -> None:  # noqa: B027 - optional hook
        """Bring ``state``'s view up to date (a no-op where ``state`` is always exact)."""


class MemoryLedger(Ledger):
    """One process's ledger (the embedded default)."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._window: tuple[str, int] = ("", -1)
        self._global = 0.0
        self._by_key: dict[str, float] = {}

    def _roll(self, policy: BudgetPolicy) -> None:
        window = (policy.period, int(self._clock() // PERIOD_SECONDS[policy.period]))
        if window != self._window:
            self._window = window
            self._global = 0.0
            self._by_key = {}

    def state(self, key_id: str | None, policy: BudgetPolicy) -> BudgetState:
        self._roll(policy)
        return BudgetState(
            self._global,
            self._by_key.get(key_id or "", 0.0),
            policy.global_limit,
            policy.per_key_limit,
        )

    async def reserve(self, key_id: str | None, amount: float, policy: BudgetPolicy) -> bool:
        if amount <= 0.0:
            return True
        if amount > self.state(key_id, policy).room() + 1e-12:
            return False
        self._global += amount
        self._by_key[key_id or ""] = self._by_key.get(key_id or "", 0.0) + amount
        return True

    async def refund(self, key_id: str | None, amount: float, policy: BudgetPolicy) -> None:
        self._roll(policy)
        self._global = max(0.0, self._global - amount)
        self._by_key[key_id or ""] = max(0.0, self._by_key.get(key_id or "", 0.0) - amount)
