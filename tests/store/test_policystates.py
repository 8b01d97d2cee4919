"""Policy version states on every SQL store backend (SQLite and PostgreSQL, from the conftest)."""

from __future__ import annotations

import pytest

from hybridinfer.errors import ConcurrentChange
from hybridinfer.policy.canary import Change, plan_canary, plan_promote
from hybridinfer.store.policystates import PolicyStates
from hybridinfer.store.sql import SqlStore


async def test_moves_are_written_together(store: SqlStore) -> None:
    await store.add_policy("v1", "version: v1\n", {}, "k")
    states = PolicyStates(store)
    await states.stage("v2", "version: v2\n", {"sentiment": 0.5}, "k")
    assert {(s.version, s.status) for s in await states.serving()} == {("v1", "active")}

    await states.move(plan_canary(await states.all(), "v2", 20.0))
    serving = {s.version: (s.status, s.percent) for s in await states.serving()}
    assert serving == {"v1": ("active", None), "v2": ("canary", 20.0)}

    await states.move(plan_promote(await states.all(), "v2"))
    by_version = {s.version: s for s in await states.all()}
    assert (by_version["v1"].status, by_version["v2"].status) == ("retired", "active")
    assert by_version["v2"].percent is None
    assert by_version["v2"].activated_at is not None


async def test_a_stale_move_writes_nothing(store: SqlStore) -> None:
    await store.add_policy("v1", "version: v1\n", {}, "k")
    states = PolicyStates(store)
    await states.stage("v2", "version: v2\n", {}, "k")
    seen = await states.all()
    await states.move(plan_canary(seen, "v2", 5.0))  # another replica, first
    stale = [Change("v1", "active", "retired"), Change("v2", "staged", "active")]
    with pytest.raises(ConcurrentChange) as raised:
        await states.move(stale)
    assert raised.value.status_code == 409
    serving = {s.version: (s.status, s.percent) for s in await states.serving()}
    assert serving == {"v1": ("active", None), "v2": ("canary", 5.0)}  # v1 was not retired
