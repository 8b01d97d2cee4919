"""The in-memory budget ledger: reservations before each call (racing requests never
overshoot), the tighter of two limits, and a fresh count each period."""

from __future__ import annotations

import asyncio

import pytest

from hybridinfer.policy.document import BudgetPolicy
from hybridinfer.signals.budget import PERIOD_SECONDS, BudgetState, MemoryLedger


async def test_budget_allows_exactly_what_fits_under_concurrency() -> None:
    ledger = MemoryLedger()
    policy = BudgetPolicy(global_limit=10 * 0.0002 + 1e-9)

    async def one_call() -> bool:
        await asyncio.sleep(0)
        return await ledger.reserve("k", 0.0002, policy)

    granted = await asyncio.gather(*(one_call() for _ in range(50)))
    assert sum(granted) == 10
    await ledger.refund("k", 0.0002, policy)
    assert await ledger.reserve("k", 0.0002, policy)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_the_room_is_the_tighter_limit_and_never_negative() -> None:
    assert BudgetState(0.0, 0.0, None, None).room() == float("inf")
    assert BudgetState(3.0, 1.0, 10.0, 2.0).room() == 1.0
    assert BudgetState(9.0, 0.0, 10.0, 5.0).room() == 1.0
    assert BudgetState(12.0, 0.0, 10.0, None).room() == 0.0


def test_policy_signals_read_the_global_figures_and_zero_when_unlimited() -> None:
    assert BudgetState(2.5, 1.0, 10.0, None).signals() == {
        "spent": 2.5,
        "limit": 10.0,
        "remaining": 7.5,
        "fraction": 0.25,
    }
    assert BudgetState(2.5, 1.0, None, 5.0).signals() == {
        "spent": 2.5,
        "limit": 0.0,
        "remaining": 0.0,
        "fraction": 0.0,
    }


async def test_a_key_limit_binds_that_key_only() -> None:
    ledger = MemoryLedger()
    policy = BudgetPolicy(per_key_limit=1.0)
    assert await ledger.reserve("a", 0.6, policy)
    assert not await ledger.reserve("a", 0.6, policy)
    assert await ledger.reserve("b", 0.6, policy)
    state = ledger.state("a", policy)
    assert (state.spent_global, state.spent_key) == (pytest.approx(1.2), pytest.approx(0.6))


async def test_a_free_call_always_fits_and_a_refund_never_goes_below_zero() -> None:
    ledger = MemoryLedger()
    spent = BudgetPolicy(global_limit=0.0)
    assert await ledger.reserve("k", 0.0, spent)
    assert not await ledger.reserve("k", 0.01, spent)
    await ledger.refund("k", 5.0, spent)
    assert ledger.state("k", spent).spent_global == 0.0
    assert ledger.state("k", spent).spent_key == 0.0


async def test_spend_starts_again_with_each_period() -> None:
    clock = Clock()
    ledger = MemoryLedger(clock)
    hourly = BudgetPolicy(period="hour", global_limit=1.0)
    assert await ledger.reserve("k", 1.0, hourly)
    assert not await ledger.reserve("k", 0.5, hourly)
    clock.now += PERIOD_SECONDS["hour"]
    assert ledger.state("k", hourly).spent_global == 0.0
    assert await ledger.reserve("k", 1.0, hourly)
