"""A key's own budget replaces the policy's per-key limit, for the router and the gate alike."""

from __future__ import annotations

from hybridinfer.policy.document import BudgetPolicy
from hybridinfer.signals.budget import MemoryLedger
from hybridinfer.signals.keybudget import KeyBudgetLedger

POLICY = BudgetPolicy(per_key_limit=1.0)


async def test_a_keys_own_budget_wins_over_the_policy() -> None:
    ledger = KeyBudgetLedger(MemoryLedger(), {"small": 0.3}.get)
    assert await ledger.reserve("small", 0.2, POLICY)
    assert not await ledger.reserve("small", 0.2, POLICY)  # 0.4 > its own 0.3
    assert abs(ledger.state("small", POLICY).room() - 0.1) < 1e-9
    # a key without its own budget gets the policy's limit
    assert await ledger.reserve("other", 0.9, POLICY)
    assert not await ledger.reserve("other", 0.2, POLICY)


async def test_refunds_go_back_to_the_key() -> None:
    ledger = KeyBudgetLedger(MemoryLedger(), {"small": 0.3}.get)
    assert await ledger.reserve("small", 0.3, POLICY)
    await ledger.refund("small", 0.3, POLICY)
    assert await ledger.reserve("small", 0.3, POLICY)
