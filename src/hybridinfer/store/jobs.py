"""Async tasks in the relational store: one row per task, its result written exactly once.

Every state change is one conditional UPDATE, so replicas racing on the same task (a
redelivery while the first run is still going, say) cannot both win: ``finish`` succeeds
only for the first writer, and a finished task is never started again.
"""

from __future__ import annotations

import time
from typing import Any

import orjson
from sqlalchemy import func, insert, select, update

from hybridinfer.errors import StoreConflict
from hybridinfer.store import tables
from hybridinfer.store.sql import SqlStore, record_of

FINISHED = ("done", "failed")


class JobStore:
    """Creates, starts, finishes and reads tasks."""

    def __init__(self, store: SqlStore) -> None:
        self._store = store

    async def create(
        self,
        task_id: str,
        key_id: str | None,
        idempotency_key: str | None,
        request_hash: str,
        request: bytes,
    ) -> dict[str, Any]:
        """Insert a queued task, or return the one this key already made with that
        ``idempotency_key``; the returned record's ``created`` says which."""
        now = time.time()
        row = {
            "id": task_id,
            "key_id": key_id,
            "idempotency_key": idempotency_key,
            "request_hash": request_hash,
            "status": "queued",
            "request": request.decode(),
            "attempts": 0,
            "created_at": now,
            "updated_at": now,
        }
        if idempotency_key is not None:
            existing = await self._by_idempotency_key(key_id, idempotency_key)
            if existing is not None:
                return {**existing, "created": False}
        try:
            async with self._store.transaction() as connection:
                await connection.execute(insert(tables.tasks).values(**row))
        except StoreConflict:  # the same key raced us in
            existing = await self._by_idempotency_key(key_id, idempotency_key)
            if existing is None:
                raise
            return {**existing, "created": False}
        return {**row, "created": True}

    async def _by_idempotency_key(
        self, key_id: str | None, idempotency_key: str | None
    ) -> dict[str, Any] | None:
        table = tables.tasks
        key_match = table.c.key_id.is_(None) if key_id is None else table.c.key_id == key_id
        async with self._store.transaction() as connection:
            row = (
                await connection.execute(
                    select(table).where(key_match, table.c.idempotency_key == idempotency_key)
                )
            ).first()
        return None if row is None else record_of(row)

    async def get(self, task_id: str) -> dict[str, Any] | None:
        async with self._store.transaction() as connection:
            row = (
                await connection.execute(select(tables.tasks).where(tables.tasks.c.id == task_id))
            ).first()
        return None if row is None else record_of(row)

    async def start(self, task_id: str) -> str | None:
        """Mark the task running (one more attempt) unless it is finished; its status after,
        or None for an unknown task."""
        table = tables.tasks
        async with self._store.transaction() as connection:
            await connection.execute(
                update(table)
                .where(table.c.id == task_id, table.c.status.not_in(FINISHED))
                .values(status="running", attempts=table.c.attempts + 1, updated_at=time.time())
            )
            row = (
                await connection.execute(select(table.c.status).where(table.c.id == task_id))
            ).first()
        return None if row is None else str(row.status)

    async def finish(
        self,
        task_id: str,
        result: dict[str, Any] | None = None,
        error: dict[str, str] | None = None,
    ) -> bool:
        """Store the result (``done``) or the error (``failed``) unless the task is finished
        already; True when this call stored it."""
        table = tables.tasks
        now = time.time()
        values: dict[str, Any] = {"updated_at": now, "finished_at": now}
        if error is None:
            values.update(status="done", result=orjson.dumps(result).decode())
        else:
            values.update(status="failed", error=orjson.dumps(error).decode())
        async with self._store.transaction() as connection:
            outcome = await connection.execute(
                update(table)
                .where(table.c.id == task_id, table.c.status.not_in(FINISHED))
                .values(**values)
            )
        return bool(outcome.rowcount == 1)

    async def count_by_status(self) -> dict[str, int]:
        """How many tasks are in each status (for metrics and tests)."""
        table = tables.tasks
        async with self._store.transaction() as connection:
            rows = await connection.execute(
                select(table.c.status, func.count()).group_by(table.c.status)
            )
            return {str(status): int(count) for status, count in rows}
