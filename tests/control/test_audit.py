"""The audit log on every SQL store backend (SQLite and PostgreSQL)."""

from __future__ import annotations

import pytest

from hybridinfer.control.audit import SYSTEM, AuditLog
from hybridinfer.store.sql import SqlStore

pytestmark = pytest.mark.parametrize("store_url", ["sqlite", "postgresql"], indirect=True)


async def test_entries_come_back_newest_first_with_their_states(store: SqlStore) -> None:
    audit = AuditLog(store)
    await audit.record(
        "key-a", "policy.apply", "p2", before={"active": "p1"}, after={"active": "p2"}
    )
    await audit.record(SYSTEM, "policy.rollback", "p2", before={"active": "p2"}, after=None)

    entries = await audit.list()

    assert [entry["action"] for entry in entries] == ["policy.rollback", "policy.apply"]
    newest, oldest = entries
    assert (newest["actor"], newest["target"], newest["after"]) == (SYSTEM, "p2", None)
    assert oldest["before"] == {"active": "p1"}
    assert oldest["after"] == {"active": "p2"}
    assert oldest["at"] <= newest["at"]


async def test_listing_filters_by_action_and_limits(store: SqlStore) -> None:
    audit = AuditLog(store)
    for index in range(5):
        await audit.record("key-a", "key.create", f"k{index}")
    await audit.record("key-a", "key.revoke", "k0")

    created = await audit.list(limit=3, action="key.create")

    assert [entry["target"] for entry in created] == ["k4", "k3", "k2"]
    assert [entry["target"] for entry in await audit.list(action="key.revoke")] == ["k0"]
