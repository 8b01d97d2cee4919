"""Task rows on both SQL stores: idempotent creation, one result per task."""

from __future__ import annotations

import asyncio

from hybridinfer.store.jobs import JobStore
from hybridinfer.store.sql import SqlStore


async def test_an_idempotency_key_gives_the_same_task(store: SqlStore) -> None:
    tasks = JobStore(store)
    first = await tasks.create("t1", "k1", "order-7", "h", b"{}")
    again = await tasks.create("t2", "k1", "order-7", "h", b"{}")
    other_key = await tasks.create("t3", "k2", "order-7", "h", b"{}")
    no_key = [await tasks.create(f"n{i}", "k1", None, "h", b"{}") for i in range(2)]
    assert first["created"]
    assert first["id"] == "t1"
    assert not again["created"]
    assert again["id"] == "t1"
    assert other_key["created"]
    assert other_key["id"] == "t3"
    assert all(record["created"] for record in no_key)


async def test_racing_submissions_with_one_key_make_one_task(store: SqlStore) -> None:
    tasks = JobStore(store)
    records = await asyncio.gather(
        *(tasks.create(f"t{i}", "k1", "same", "h", b"{}") for i in range(8))
    )
    assert len({record["id"] for record in records}) == 1
    assert sum(record["created"] for record in records) == 1


async def test_the_first_result_wins_and_a_finished_task_never_restarts(store: SqlStore) -> None:
    tasks = JobStore(store)
    await tasks.create("t1", "k1", None, "h", b"{}")
    assert await tasks.start("t1") == "running"
    assert await tasks.start("t1") == "running"  # a redelivery while the first runs
    stored = await asyncio.gather(*(tasks.finish("t1", result={"n": n}) for n in range(5)))
    assert sum(stored) == 1
    assert not await tasks.finish("t1", error={"code": "late", "message": "too late"})
    assert await tasks.start("t1") == "done"
    record = await tasks.get("t1")
    assert record is not None
    assert record["status"] == "done"
    assert record["attempts"] == 2
    assert record["error"] is None
    assert await tasks.start("missing") is None
    assert await tasks.count_by_status() == {"done": 1}
