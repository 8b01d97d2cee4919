"""The audit log: who changed what, when, and the state before and after.

Every admin action (policy apply/canary/promote/rollback, rule replacement, key changes, node
registration, model rollouts) records one row. Rows are only ever appended; before/after are
stored as JSON, never secrets (callers pass key ids and versions, not key material).
"""

from __future__ import annotations

import time
from typing import Any

import orjson
from sqlalchemy import insert, select

from hybridinfer.store import tables
from hybridinfer.store.sql import SqlStore, record_of

SYSTEM = "system"
"""The actor of changes nobody asked for over the API (seed files, automatic promotion)."""


def _json_or_none(value: object) -> str | None:
    return None if value is None else orjson.dumps(value, default=str).decode()


class AuditLog:
    """Appends audit entries to the relational store and lists them, newest first."""

    def __init__(self, store: SqlStore) -> None:
        self._store = store

    async def record(
        self,
        actor: str,
        action: str,
        target: str,
        before: object = None,
        after: object = None,
    ) -> None:
        """Append one entry: ``actor`` (a key id or ``system``) did ``action`` to ``target``."""
        row = {
            "at": time.time(),
            "actor": actor,
            "action": action,
            "target": target,
            "before": _json_or_none(before),
            "after": _json_or_none(after),
        }
        async with self._store.transaction() as connection:
            await connection.execute(insert(tables.audit_log).values(**row))

    async def list(self, limit: int = 100, action: str | None = None) -> list[dict[str, Any]]:
        """The newest ``limit`` entries, optionally only those of one ``action``."""
        table = tables.audit_log
        query = select(table).order_by(table.c.id.desc()).limit(limit)
        if action is not None:
            query = query.where(table.c.action == action)
        async with self._store.transaction() as connection:
            rows = (await connection.execute(query)).all()
        entries = []
        for row in rows:
            entry = record_of(row)
            for field in ("before", "after"):
                entry[field] = None if entry[field] is None else orjson.loads(entry[field])
            entries.append(entry)
        return entries
