"""Guarded walks in the store, and the finished traces of a window, all replicas'.

The walk row is the state every replica follows: the leader moves it, the others only read
it. Figures are computed from the shared ``requests`` table, so they cover every replica. Policy
canaries walk in ``policy_walks`` (keyed by version), model rollouts in ``rollout_walks``
(keyed by rollout id): one shape, one reader and writer.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import Table, delete, insert, select, update

from hybridinfer.store import tables
from hybridinfer.store.sql import SqlStore

LIVE = ("walking", "paused")
"""Statuses of a walk still under way."""


@dataclass(frozen=True, slots=True)
class Walk:
    """One walk as stored: ``key`` is what is walked (a policy version, a rollout id), named
    ``key_name`` in its description."""

    key: str
    status: str
    step: int
    step_started_at: float
    settings: dict[str, Any]
    state: dict[str, Any]
    started_at: float
    updated_at: float
    key_name: str = "version"

    @property
    def percent(self) -> float:
        """The share the walk's step serves."""
        return float(self.settings["steps"][self.step])

    def describe(self) -> dict[str, Any]:
        return {
            self.key_name: self.key,
            "status": self.status,
            "step": self.step,
            "percent": self.percent,
            "step_started_at": self.step_started_at,
            "settings": self.settings,
            "state": self.state,
            "started_at": self.started_at,
            "updated_at": self.updated_at,
        }


class Walks:
    """Reads and writes walk rows of one table (policy walks unless told); the window of
    traces a step is judged on."""

    def __init__(
        self,
        store: SqlStore,
        clock: Callable[[], float] = time.time,
        table: Table = tables.policy_walks,
    ) -> None:
        self._store = store
        self._clock = clock
        self._table = table
        (self._key,) = table.primary_key.columns

    async def start(self, key: str, settings: dict[str, Any]) -> Walk:
        """A new walk at its first step (a finished walk of the same key is replaced)."""
        now = self._clock()
        table = self._table
        async with self._store.transaction() as connection:
            await connection.execute(delete(table).where(self._key == key))
            await connection.execute(
                insert(table).values(
                    {
                        self._key.name: key,
                        "status": "walking",
                        "step": 0,
                        "step_started_at": now,
                        "settings": orjson.dumps(settings).decode(),
                        "state": orjson.dumps({"steps": []}).decode(),
                        "started_at": now,
                        "updated_at": now,
                    }
                )
            )
        found = await self.get(key)
        assert found is not None
        return found

    async def get(self, key: str) -> Walk | None:
        table = self._table
        async with self._store.transaction() as connection:
            row = (await connection.execute(select(table).where(self._key == key))).first()
        return None if row is None else self._walk(row._mapping)

    async def all(self) -> list[Walk]:
        """Every walk, newest first."""
        table = self._table
        async with self._store.transaction() as connection:
            rows = await connection.execute(select(table).order_by(table.c.started_at.desc()))
            return [self._walk(row._mapping) for row in rows]

    async def live(self) -> list[Walk]:
        return [walk for walk in await self.all() if walk.status in LIVE]

    async def save(
        self,
        key: str,
        *,
        status: str,
        step: int,
        state: dict[str, Any],
        step_started_at: float | None = None,
    ) -> None:
        values: dict[str, Any] = {
            "status": status,
            "step": step,
            "state": orjson.dumps(state).decode(),
            "updated_at": self._clock(),
        }
        if step_started_at is not None:
            values["step_started_at"] = step_started_at
        async with self._store.transaction() as connection:
            await connection.execute(update(self._table).where(self._key == key).values(values))

    async def traces_since(self, since: float, limit: int = 100_000) -> list[dict[str, Any]]:
        """Finished traces written from ``since`` on, by every replica, oldest first."""
        table = tables.requests
        query = (
            select(table.c.trace)
            .where(table.c.created_at >= since)
            .order_by(table.c.created_at)
            .limit(limit)
        )
        async with self._store.transaction() as connection:
            rows = await connection.execute(query)
            return [orjson.loads(row.trace) for row in rows]

    def _walk(self, row: Any) -> Walk:
        return Walk(
            key=str(row[self._key.name]),
            status=str(row["status"]),
            step=int(row["step"]),
            step_started_at=float(row["step_started_at"]),
            settings=orjson.loads(row["settings"]),
            state=orjson.loads(row["state"]),
            started_at=float(row["started_at"]),
            updated_at=float(row["updated_at"]),
            key_name=str(self._key.name),
        )
