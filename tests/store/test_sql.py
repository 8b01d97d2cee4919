"""The SQL store's shared suite: every test runs on SQLite and on PostgreSQL (conftest)."""

from __future__ import annotations

import asyncio

import pytest

from hybridinfer.errors import StoreUnavailable
from hybridinfer.store.sql import SqlStore


async def test_migrations_are_idempotent(store: SqlStore) -> None:
    await store.migrate()
    assert await store.ping()


async def test_keys_are_stored_and_revoked(store: SqlStore) -> None:
    await store.add_key("abc", "ci", "scrypt$1$00$00", ["infer"])
    record = await store.get_key("abc")
    assert record is not None
    assert record["scopes"] == "infer"
    assert record["revoked_at"] is None
    assert not await store.has_admin_key()
    assert await store.revoke_key("abc")
    assert not await store.revoke_key("abc")
    revoked = await store.get_key("abc")
    assert revoked is not None
    assert revoked["revoked_at"] is not None


async def test_replicas_migrating_at_once_do_not_collide(postgres_url: str) -> None:
    """Three replicas start together on one fresh database: the advisory lock lets one
    migrate while the others wait, then find the schema at head. (PostgreSQL only: a SQLite
    store belongs to one process, so replicas never share one.)"""
    store_url = postgres_url
    replicas = [SqlStore(store_url) for _ in range(3)]
    try:
        await asyncio.gather(*(replica.migrate() for replica in replicas))
        assert all([await replica.ping() for replica in replicas])
    finally:
        for replica in replicas:
            await replica.close()


async def test_nodes_are_listed_for_other_replicas(store: SqlStore) -> None:
    await store.save_node("edge-1", "edge", "private", "http://e:1", b'{"id": "edge-1"}')
    await store.save_node("edge-1", "edge", "private", "http://e:2", b'{"id": "edge-1"}')
    [record] = await store.list_nodes()
    assert record["id"] == "edge-1"
    assert record["registered_at"] > 0


async def test_a_pooled_connection_is_pinged_on_postgresql_only(store: SqlStore) -> None:
    """A PostgreSQL connection can die with its server, so checkout pings it; a SQLite one is
    a file handle, and its ping would be four round trips to aiosqlite's thread for nothing."""
    dialect = store._engine.sync_engine.dialect
    pings: list[object] = []
    original = dialect.do_ping

    def counted(connection: object) -> bool:
        pings.append(connection)
        return bool(original(connection))

    dialect.do_ping = counted  # type: ignore[method-assign]
    for _ in range(3):
        assert await store.ping()
    assert (len(pings) > 0) is store.url.startswith("postgresql")


def _trace(request_id: str, subtask: str) -> dict[str, object]:
    decision = {"subtask": subtask, "chosen": "m:1", "tier": "local", "policy_version": "p"}
    return {
        "request_id": request_id,
        "task": "chat",
        "status": "ok",
        "created_at": 1.0,
        "timings_ms": {"total": 2.5},
        "decisions": [{**decision, "reason": "r"}],
    }


async def test_a_batch_of_traces_is_written_whole_or_not_at_all(store: SqlStore) -> None:
    await store.save_traces([_trace("a", "s1"), _trace("b", "s2")])
    assert sorted(t["request_id"] for t in await store.list_traces(10, None)) == ["a", "b"]
    if store.url.startswith("postgresql"):  # SQLite does not bound a VARCHAR's length
        with pytest.raises(StoreUnavailable):
            await store.save_traces([_trace("c", "s3"), _trace("d", "x" * 200)])
        assert await store.get_trace("c") is None  # the requests row went with the decision
    trace = await store.get_trace("a")
    assert trace is not None
    assert trace["decisions"][0]["subtask"] == "s1"
