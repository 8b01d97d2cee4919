"""Cloud spend around one paid call: reserved before it starts, given back if it fails."""

from __future__ import annotations

from collections.abc import Callable

from hybridinfer.errors import BudgetExhausted
from hybridinfer.policy.document import BudgetPolicy
from hybridinfer.signals.budget import Ledger


class SpendGuard:
    """The one place calls are charged, for plain and streamed calls alike."""

    def __init__(self, ledger: Ledger, budget: Callable[[], BudgetPolicy]) -> None:
        self._ledger = ledger
        self._budget = budget

    async def reserve(self, key_id: str | None, cost: float) -> None:
        """Reserve ``cost`` (atomic); BudgetExhausted when it does not fit."""
        if cost > 0.0 and not await self._ledger.reserve(key_id, cost, self._budget()):
            raise BudgetExhausted("the cloud budget for this period is spent", retry_after_s=60.0)

    async def refund(self, key_id: str | None, cost: float) -> None:
        """Give back a reservation whose call did not happen."""
        if cost > 0.0:
            await self._ledger.refund(key_id, cost, self._budget())
