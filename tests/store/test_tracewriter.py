"""The SQLite trace writer: rows written on the loop's thread, never waiting there for another
connection's lock or a checkpoint."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from hybridinfer.errors import StoreUnavailable
from hybridinfer.store import tracewriter
from hybridinfer.store.sql import SqlStore
from hybridinfer.store.tracewriter import SqliteTraceWriter


def rows(count: int, start: int = 0) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    requests = [
        {
            "request_id": f"r{index}",
            "task": "chat",
            "status": "ok",
            "key_id": None,
            "created_at": 1.0 + index,
            "total_ms": 2.0,
            "trace": "{}",
        }
        for index in range(start, start + count)
    ]
    decisions = [
        {
            "request_id": row["request_id"],
            "subtask_id": "generate",
            "deployment": "node/model:1",
            "tier": "cloud",
            "policy_version": "p1",
            "reason": "because",
        }
        for row in requests
    ]
    return requests, decisions


@pytest.fixture
async def database(tmp_path: Path) -> Path:
    """A migrated SQLite file."""
    path = tmp_path / "state.db"
    store = SqlStore(f"sqlite+aiosqlite:///{path}")
    await store.migrate()
    await store.close()
    return path


def counted(path: Path, table: str) -> int:
    with sqlite3.connect(path) as connection:
        return int(connection.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


async def test_rows_are_written_in_one_transaction_each(database: Path) -> None:
    writer = SqliteTraceWriter(str(database))
    await writer.write(*rows(3))
    await writer.write(*rows(2, start=3))
    writer.close()
    assert counted(database, "requests") == 5
    assert counted(database, "decisions") == 5


async def test_a_locked_database_is_waited_for_off_the_loop(database: Path) -> None:
    holder = sqlite3.connect(database, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")  # another writer holds the lock
    writer = SqliteTraceWriter(str(database))
    writing = asyncio.create_task(writer.write(*rows(2)))
    ticks = 0
    for _ in range(20):  # the loop keeps running while the batch waits for the lock
        await asyncio.sleep(0.005)
        ticks += 1
    assert not writing.done()
    assert ticks == 20
    holder.execute("COMMIT")
    await asyncio.wait_for(writing, 5)
    holder.close()
    writer.close()
    assert counted(database, "requests") == 2


async def test_a_cancelled_write_waits_for_its_thread_to_let_go_of_the_connection(
    database: Path,
) -> None:
    holder = sqlite3.connect(database, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    writer = SqliteTraceWriter(str(database))
    writing = asyncio.create_task(writer.write(*rows(1)))
    await asyncio.sleep(0.05)  # the batch waits for the lock on a worker thread
    writing.cancel()
    await asyncio.sleep(0.05)
    assert not writing.done()  # the thread still holds the connection
    holder.execute("COMMIT")
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(writing, 5)
    await writer.write(*rows(1, start=1))  # the connection is free again
    holder.close()
    writer.close()
    assert counted(database, "requests") == 2


async def test_a_lock_held_too_long_makes_the_store_unavailable(
    database: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tracewriter, "LOCK_WAIT_S", 0.05)
    holder = sqlite3.connect(database, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    writer = SqliteTraceWriter(str(database))
    with pytest.raises(StoreUnavailable, match="locked"):
        await writer.write(*rows(1))
    holder.execute("ROLLBACK")
    await writer.write(*rows(1))  # the lock released, the next batch goes through
    holder.close()
    writer.close()
    assert counted(database, "requests") == 1


async def test_a_failed_batch_leaves_nothing_behind(database: Path) -> None:
    writer = SqliteTraceWriter(str(database))
    requests, decisions = rows(2)
    del decisions[1]["reason"]  # the second insert fails after the first succeeded
    with pytest.raises(StoreUnavailable):
        await writer.write(requests, decisions)
    await writer.write(*rows(1, start=5))
    writer.close()
    assert counted(database, "requests") == 1


async def test_checkpoints_run_on_a_worker_thread_at_their_interval(
    database: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[int] = []

    def checkpoint(connection: sqlite3.Connection) -> None:
        threads.append(threading.get_ident())
        connection.execute("PRAGMA wal_checkpoint(PASSIVE)")

    monkeypatch.setattr(tracewriter, "CHECKPOINT_EVERY", 4)
    monkeypatch.setattr(tracewriter, "_checkpoint", checkpoint)
    writer = SqliteTraceWriter(str(database))
    for start in range(0, 10, 2):
        await writer.write(*rows(2, start=start))
    writer.close()
    assert len(threads) == 2  # before the writes that follow the 4th and the 8th trace
    assert threading.get_ident() not in threads


async def test_the_writer_never_checkpoints_on_commit(database: Path) -> None:
    writer = SqliteTraceWriter(str(database))
    await writer.write(*rows(1))
    assert writer._connection is not None
    assert writer._connection.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
    assert writer._connection.execute("PRAGMA busy_timeout").fetchone()[0] == 0
    writer.close()


async def test_a_sqlite_file_store_hands_the_sink_small_batches(tmp_path: Path) -> None:
    on_file = SqlStore(f"sqlite+aiosqlite:///{tmp_path / 'state.db'}")
    in_memory = SqlStore("sqlite+aiosqlite:///:memory:")
    assert on_file.trace_batch_size == tracewriter.BATCH
    assert in_memory.trace_batch_size > tracewriter.BATCH
    await on_file.close()
    await in_memory.close()


async def test_an_empty_batch_writes_nothing(database: Path) -> None:
    writer = SqliteTraceWriter(str(database))
    await writer.write([], [])
    assert writer._connection is None  # not even opened
    writer.close()
