"""The learner's log in the relational store: every placement's outcome in one ordered table.

The learner's state is a function of this log: each replica applies the outcomes in id order
(``learning/sync.py``), so replicas agree and a restart rebuilds what it knew. The same rows,
with their propensities, are what the offline estimators read (``learning/offline.py``).
Explicit feedback is one row per request in ``feedback``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import orjson
from sqlalchemy import func, insert, select, update

from hybridinfer.errors import Conflict, StoreConflict
from hybridinfer.store import tables
from hybridinfer.store.sql import SqlStore, record_of

_JSON_COLUMNS = ("context", "candidates")


def _decoded(row: dict[str, Any]) -> dict[str, Any]:
    for name in _JSON_COLUMNS:
        row[name] = orjson.loads(row[name])
    return row


class LearnerLog:
    """Appends outcomes, reads them in order, resets a capability, stores feedback."""

    def __init__(self, store: SqlStore) -> None:
        self._store = store

    async def append(self, outcomes: Sequence[dict[str, Any]]) -> None:
        """Insert outcomes (``context`` and ``candidates`` as lists)."""
        if not outcomes:
            return
        rows = [
            {**row, **{name: orjson.dumps(row[name]).decode() for name in _JSON_COLUMNS}}
            for row in outcomes
        ]
        async with self._store.transaction() as connection:
            await connection.execute(insert(tables.learner_outcomes), rows)

    async def since(self, after_id: int, limit: int = 1000) -> list[dict[str, Any]]:
        """Outcomes with id above ``after_id``, oldest first."""
        table = tables.learner_outcomes
        query = select(table).where(table.c.id > after_id).order_by(table.c.id).limit(limit)
        async with self._store.transaction() as connection:
            rows = (await connection.execute(query)).all()
        return [_decoded(record_of(row)) for row in rows]

    async def newest_id(self) -> int:
        table = tables.learner_outcomes
        async with self._store.transaction() as connection:
            found = (await connection.execute(select(func.max(table.c.id)))).scalar()
        return int(found or 0)

    async def records(self, capability: str, limit: int = 10_000) -> list[dict[str, Any]]:
        """The newest ``limit`` outcomes of a capability since its last reset, oldest first."""
        table = tables.learner_outcomes
        after = (await self.resets()).get(capability, (0, 0))[1]
        query = (
            select(table)
            .where(table.c.capability == capability, table.c.id > after)
            .order_by(table.c.id.desc())
            .limit(limit)
        )
        async with self._store.transaction() as connection:
            rows = (await connection.execute(query)).all()
        return [_decoded(record_of(row)) for row in reversed(rows)]

    async def resets(self) -> dict[str, tuple[int, int]]:
        """Capability → (generation, the last outcome id it forgot)."""
        table = tables.learner_resets
        async with self._store.transaction() as connection:
            rows = (await connection.execute(select(table))).all()
        return {row.capability: (row.generation, row.after_id) for row in rows}

    async def reset(self, capability: str) -> tuple[int, int]:
        """Forget a capability's outcomes so far (they stay in the log, for evaluation)."""
        newest = await self.newest_id()
        table = tables.learner_resets
        async with self._store.transaction() as connection:
            changed = await connection.execute(
                update(table)
                .where(table.c.capability == capability)
                .values(generation=table.c.generation + 1, after_id=newest)
            )
            if changed.rowcount == 0:
                await connection.execute(
                    insert(table).values(capability=capability, generation=1, after_id=newest)
                )
        return (await self.resets())[capability]

    async def add_feedback(
        self, request_id: str, key_id: str | None, quality: float, body: dict[str, Any]
    ) -> None:
        """Store one request's feedback; a second for the same request is a 409."""
        row = {
            "request_id": request_id,
            "key_id": key_id,
            "quality": quality,
            "body": orjson.dumps(body).decode(),
            "created_at": time.time(),
        }
        try:
            async with self._store.transaction() as connection:
                await connection.execute(insert(tables.feedback).values(**row))
        except StoreConflict:
            raise Conflict("this request has feedback already", code="feedback_exists") from None

    async def get_feedback(self, request_id: str) -> dict[str, Any] | None:
        table = tables.feedback
        async with self._store.transaction() as connection:
            row = (
                await connection.execute(select(table).where(table.c.request_id == request_id))
            ).first()
        if row is None:
            return None
        found = record_of(row)
        found["body"] = orjson.loads(found["body"])
        return found

    async def feedback_for(self, request_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Request id → its feedback (``quality``, ``created_at``, ``key_id``), for those that
        have one."""
        if not request_ids:
            return {}
        table = tables.feedback
        query = select(table.c.request_id, table.c.quality, table.c.created_at, table.c.key_id)
        async with self._store.transaction() as connection:
            rows = (
                await connection.execute(query.where(table.c.request_id.in_(set(request_ids))))
            ).all()
        return {row.request_id: record_of(row) for row in rows}
