"""The SQL store's shared suite: every test runs on SQLite and on PostgreSQL (conftest)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from hybridinfer.core.trace import Trace
from hybridinfer.errors import StoreUnavailable
from hybridinfer.store.sql import SqlStore
from hybridinfer.store.tracesink import TraceSink


def finished(request_id: str, status: str = "ok") -> Trace:
    trace = Trace(request_id=request_id, task="sentiment")
    trace.decisions = [
        {
            "subtask": "classify",
            "chosen": "local/small:1",
            "tier": "local",
            "policy_version": "p1",
            "reason": "because",
        }
    ]
    trace.finish(status)
    return trace


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


async def test_trace_sink_writes_in_batches_and_reads_back(store: SqlStore) -> None:
    sink = TraceSink(store, batch_size=2)
    for index in range(5):
        sink.record(finished(f"r{index}", "ok" if index % 2 else "error"))
    await sink.flush()
    assert sink.written == 5
    fresh = TraceSink(store)  # a new sink has no memory: reads come from the store
    trace = await fresh.get("r3")
    assert trace is not None
    assert trace["decisions"][0]["reason"] == "because"
    errors = await fresh.recent(10, "error")
    assert [t["request_id"] for t in errors] == ["r4", "r2", "r0"]


async def test_a_reused_request_id_does_not_block_the_writer(store: SqlStore) -> None:
    sink = TraceSink(store)
    sink.record(finished("same", "error"))
    sink.record(finished("same", "ok"))
    await sink.flush()
    trace = await TraceSink(store).get("same")
    assert trace is not None
    assert trace["status"] == "ok"


async def test_failed_writes_stay_buffered_until_the_store_recovers(tmp_path: Path) -> None:
    unmigrated = SqlStore(f"sqlite+aiosqlite:///{tmp_path / 'empty.db'}")  # no tables yet
    sink = TraceSink(unmigrated, capacity=2)
    for index in range(3):
        sink.record(finished(f"r{index}"))
    assert sink.dropped == 1  # past the bound: dropped and counted, never blocking
    with pytest.raises(StoreUnavailable):
        await sink.flush()
    assert sink.written == 0
    await unmigrated.migrate()
    await sink.flush()
    assert sink.written == 2
    assert await TraceSink(unmigrated).get("r1") is not None
    await unmigrated.close()


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
