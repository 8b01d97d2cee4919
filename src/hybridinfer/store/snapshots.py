"""Per-second snapshots of the live signals decisions were made on, for what-if replay.

A decision keeps a reference (``"<second>-<replica>"``), not a copy: the first decision of a
second for a (capability, task) computes the ``node``/``network`` maps its rules would read;
later ones in that second only look the entry up. Closed seconds are written in batches by the
trace sink; past ``capacity`` open seconds (a store away for an hour) the oldest are dropped.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any

import orjson
from sqlalchemy import delete, insert, select

from hybridinfer.store import tables
from hybridinfer.store.sql import SqlStore

Body = dict[str, Any]


class SignalSnapshots:
    """Open per-second snapshots of this replica, and their references."""

    def __init__(self, capacity: int = 3_600, clock: Callable[[], float] = time.time) -> None:
        self._token = uuid.uuid4().hex[:8]
        self._clock = clock
        self._capacity = capacity
        self._open: dict[int, Body] = {}
        self.dropped = 0

    def note(self, key: str, compute: Callable[[], Body]) -> str:
        """The reference of this second's snapshot, with ``key``'s maps in it."""
        second = int(self._clock())
        entry = self._open.get(second)
        if entry is None:
            entry = self._open[second] = {}
            if len(self._open) > self._capacity:
                self._open.pop(next(iter(self._open)))
                self.dropped += 1
        if key not in entry:
            entry[key] = compute()
        return f"{second}-{self._token}"

    def drain(
        self, everything: bool = False, open_too: bool = False
    ) -> list[tuple[str, int, Body]]:
        """Closed seconds (all of them with ``everything``), taken out for writing; with
        ``open_too`` a copy of the still-open second as well, kept open for later decisions
        (a replay must see the second it runs in; the row is rewritten when it closes)."""
        now = int(self._clock())
        closed = [second for second in self._open if everything or second < now]
        rows = [(f"{s}-{self._token}", s, self._open.pop(s)) for s in closed]
        if open_too:
            rows += [(f"{s}-{self._token}", s, dict(body)) for s, body in self._open.items()]
        return rows

    def put_back(self, rows: Iterable[tuple[str, int, Body]]) -> None:
        """Rows a failed write took out: kept for the next try."""
        for _ref, second, body in rows:
            self._open.setdefault(second, body)


async def save_snapshots(store: SqlStore, rows: list[tuple[str, int, Body]]) -> None:
    """Write drained snapshots in one transaction, replacing a row written while its second
    was still open (only this replica writes its own references)."""
    if not rows:
        return
    table = tables.signal_snapshots
    values = [
        {"ref": ref, "at": float(second), "body": orjson.dumps(body).decode()}
        for ref, second, body in rows
    ]
    async with store.transaction() as connection:
        await connection.execute(delete(table).where(table.c.ref.in_([v["ref"] for v in values])))
        await connection.execute(insert(table), values)


async def load_snapshots(store: SqlStore, refs: set[str]) -> dict[str, Body]:
    """The stored snapshots of ``refs`` (missing ones are absent)."""
    table = tables.signal_snapshots
    found: dict[str, Body] = {}
    ordered = sorted(refs)
    async with store.transaction() as connection:
        for start in range(0, len(ordered), 500):
            chunk = ordered[start : start + 500]
            rows = await connection.execute(
                select(table.c.ref, table.c.body).where(table.c.ref.in_(chunk))
            )
            found.update({row.ref: orjson.loads(row.body) for row in rows})
    return found
