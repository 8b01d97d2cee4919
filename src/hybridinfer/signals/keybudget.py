"""Per-key budgets: a key's own spend limit (its key record) replaces the policy's.

A wrapper around any ledger, so the router's view (``state``) and the executor's gate
(``reserve``) both see the same limit, in memory and on the shared ledger alike.
"""

from __future__ import annotations

from collections.abc import Callable

from hybridinfer.policy.document import BudgetPolicy
from hybridinfer.signals.budget import BudgetState, Ledger


class KeyBudgetLedger(Ledger):
    """``inner``, with ``budget_of(key_id)`` (when not None) as that key's per-period limit."""

    def __init__(self, inner: Ledger, budget_of: Callable[[str | None], float | None]) -> None:
        self.inner = inner
        self._budget_of = budget_of

    def _policy(self, key_id: str | None, policy: BudgetPolicy) -> BudgetPolicy:
        own = self._budget_of(key_id)
        if own is None:
            return policy
        return policy.model_copy(update={"per_key_limit": own})

    def state(self, key_id: str | None, policy: BudgetPolicy) -> BudgetState:
        return self.inner.state(key_id, self._policy(key_id, policy))

    async def reserve(self, key_id: str | None, amount: float, policy: BudgetPolicy) -> bool:
        return await self.inner.reserve(key_id, amount, self._policy(key_id, policy))

    async def refund(self, key_id: str | None, amount: float, policy: BudgetPolicy) -> None:
        await self.inner.refund(key_id, amount, self._policy(key_id, policy))

    async def refresh(self, policy: BudgetPolicy) -> None:
        await self.inner.refresh(policy)
