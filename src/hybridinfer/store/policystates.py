"""Which policy versions serve traffic, changed by compare-and-set so replicas cannot race.

Every change names the status it expects a version to have; if another replica moved that
version first, nothing is written and the caller gets 409 ``policy_changed_concurrently``.
"""

from __future__ import annotations

import time
from typing import Any

import orjson
from sqlalchemy import Row, insert, select, update

from hybridinfer.errors import ConcurrentChange
from hybridinfer.policy.canary import Change, VersionState
from hybridinfer.store import tables
from hybridinfer.store.sql import SqlStore

_COLUMNS = (
    tables.policies.c.version,
    tables.policies.c.status,
    tables.policies.c.canary_percent,
    tables.policies.c.activated_at,
)


def _state(row: Row[*tuple[Any, ...]]) -> VersionState:
    return VersionState(str(row.version), str(row.status), row.canary_percent, row.activated_at)


class PolicyStates:
    """Reads and moves the states of stored policy versions."""

    def __init__(self, store: SqlStore) -> None:
        self._store = store

    async def all(self) -> list[VersionState]:
        async with self._store.transaction() as connection:
            rows = await connection.execute(select(*_COLUMNS))
            return [_state(row) for row in rows]

    async def serving(self) -> list[VersionState]:
        """The active version and the canary, if any: what every replica polls for."""
        query = select(*_COLUMNS).where(tables.policies.c.status.in_(("active", "canary")))
        async with self._store.transaction() as connection:
            return [_state(row) for row in await connection.execute(query)]

    async def stage(
        self, version: str, body: str, thresholds: dict[str, float], author: str | None
    ) -> None:
        """Store a version that serves nothing until a canary or promotion moves it."""
        async with self._store.transaction() as connection:
            await connection.execute(
                insert(tables.policies).values(
                    version=version,
                    body=body,
                    status="staged",
                    thresholds=orjson.dumps(thresholds).decode(),
                    author=author,
                    created_at=time.time(),
                )
            )

    async def move(self, changes: list[Change]) -> None:
        """Apply every change in one transaction, or none if a version moved meanwhile."""
        table = tables.policies
        now = time.time()
        async with self._store.transaction() as connection:
            for change in changes:
                values: dict[str, object] = {"status": change.after, "canary_percent": None}
                if change.after == "canary":
                    values["canary_percent"] = change.percent
                if change.after == "active":
                    values["activated_at"] = now
                result = await connection.execute(
                    update(table)
                    .where(table.c.version == change.version, table.c.status == change.before)
                    .values(**values)
                )
                if result.rowcount != 1:  # leaving the block rolls the transaction back
                    raise ConcurrentChange(
                        f"policy {change.version!r} changed meanwhile (no longer "
                        f"{change.before}); read the versions again and retry"
                    )
