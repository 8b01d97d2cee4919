"""Leases: one replica leads a loop (a canary walk) until its lease expires.

A row per lease name with its holder and expiry. Taking or renewing is one conditional
``UPDATE`` (held by me, or expired), else an ``INSERT`` that fails if another replica inserted
first — both atomic on SQLite and PostgreSQL, so two replicas never both lead.

A holder renews only once a third of the lease has passed (the row says it is held until
then, so nobody else can take it meanwhile): a loop that asks every half second writes the
store about once a second per lease, not on every tick.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from sqlalchemy import insert, or_, select, update

from hybridinfer.errors import StoreConflict
from hybridinfer.store import tables
from hybridinfer.store.sql import SqlStore

RENEW_LEFT = 2 / 3
"""A held lease is renewed once less than this share of it is left."""


class Lease:
    """A named lease this replica (``holder``) tries to take and keep."""

    def __init__(
        self,
        store: SqlStore,
        name: str,
        holder: str,
        ttl_s: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self.name = name
        self.holder = holder
        self._ttl = ttl_s
        self._clock = clock
        self._held_until = 0.0
        """When the lease this replica last wrote expires (0: not held)."""

    async def hold(self) -> bool:
        """Take or renew the lease; True while this replica holds it."""
        table = tables.leases
        now = self._clock()
        if self._held_until - now > self._ttl * RENEW_LEFT:
            return True  # written recently: held for most of a lease yet
        self._held_until = 0.0
        async with self._store.transaction() as connection:
            result = await connection.execute(
                update(table)
                .where(
                    table.c.name == self.name,
                    or_(table.c.holder == self.holder, table.c.expires_at < now),
                )
                .values(holder=self.holder, expires_at=now + self._ttl)
            )
            if result.rowcount == 1:
                self._held_until = now + self._ttl
                return True
        try:
            async with self._store.transaction() as connection:
                await connection.execute(
                    insert(table).values(
                        name=self.name, holder=self.holder, expires_at=now + self._ttl
                    )
                )
        except StoreConflict:  # the row exists and another replica holds it
            return False
        self._held_until = now + self._ttl
        return True

    async def leader(self) -> str | None:
        """Who holds the lease now (None when nobody does)."""
        table = tables.leases
        async with self._store.transaction() as connection:
            row = (
                await connection.execute(
                    select(table.c.holder, table.c.expires_at).where(table.c.name == self.name)
                )
            ).first()
        if row is None or row.expires_at < self._clock():
            return None
        return str(row.holder)

    async def release(self) -> None:
        """Let another replica take over at once (a clean stop)."""
        self._held_until = 0.0
        table = tables.leases
        async with self._store.transaction() as connection:
            await connection.execute(
                update(table)
                .where(table.c.name == self.name, table.c.holder == self.holder)
                .values(expires_at=0.0)
            )
