"""The retained prompt sample: the one place a prompt's text is kept, opt-in and bounded.

A staged *router* (another artifact, another difficulty threshold) cannot be replayed on the
trace alone: it must read the prompt again. When ``retained_prompts`` is on, a random share of
the prompts the difficulty scorer read is appended here on the request path (one draw and one
list append: O(1)), and the trace sink writes the buffer to its own table in the private-zone
SQL store off the request path. The table holds at most ``max_rows`` (oldest deleted first)
for at most ``ttl_s`` seconds. A prompt the privacy scan marked sensitive is kept only when
``keep_sensitive`` says so. Nothing here is logged, traced or exported.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from sqlalchemy import delete, func, insert, select

from hybridinfer.store import tables
from hybridinfer.store.sql import SqlStore

BUFFER = 1_000
"""Prompts waiting for the sink at most (a store away drops the rest, counted)."""
PURGE_EVERY_S = 60.0
"""How often the sink deletes expired rows when nothing new is written."""


@dataclass(frozen=True, slots=True)
class RetainedPrompt:
    """One kept prompt: what the difficulty scorer read, and where it came from."""

    request_id: str
    subtask_id: str
    capability: str
    at: float
    text: str


class RetainedPrompts:
    """This process's buffer of sampled prompts, and the table's bounds."""

    def __init__(
        self,
        rate: float,
        max_rows: int,
        ttl_s: float,
        keep_sensitive: bool = False,
        draw: Callable[[], float] = random.random,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.rate = rate
        self.max_rows = max_rows
        self.ttl_s = ttl_s
        self.keep_sensitive = keep_sensitive
        self._draw = draw
        self.clock = clock
        self._pending: dict[tuple[str, str], RetainedPrompt] = {}
        """By (request id, subtask id): a request scored twice (a cache lookup, then its
        stream) is kept once."""
        self._purged_at = 0.0
        self.dropped = 0

    def offer(
        self, request_id: str, subtask_id: str, capability: str, text: str, sensitive: bool
    ) -> bool:
        """Keep ``text`` with probability ``rate`` (never blocks, never raises); whether kept."""
        if not request_id or (sensitive and not self.keep_sensitive):
            return False
        if self._draw() >= self.rate:
            return False
        if len(self._pending) >= BUFFER:
            self.dropped += 1
            return False
        at = float(int(self.clock()))
        key = (request_id, subtask_id)
        self._pending[key] = RetainedPrompt(request_id, subtask_id, capability, at, text)
        return True

    @property
    def buffered(self) -> int:
        return len(self._pending)

    def drain(self) -> list[RetainedPrompt]:
        """Everything buffered, taken out for writing."""
        taken, self._pending = self._pending, {}
        return list(taken.values())

    def put_back(self, rows: Iterable[RetainedPrompt]) -> None:
        """Rows a failed write took out: kept for the next try, within the buffer's bound."""
        room = max(0, BUFFER - len(self._pending))
        for row in list(rows)[:room]:
            self._pending.setdefault((row.request_id, row.subtask_id), row)

    def purge_due(self) -> bool:
        """Whether expired rows should be looked for although nothing new is written."""
        return self.clock() - self._purged_at >= PURGE_EVERY_S

    def purged(self, at: float) -> None:
        self._purged_at = at


async def save_retained(
    store: SqlStore, retained: RetainedPrompts, rows: list[RetainedPrompt]
) -> None:
    """Write drained rows, then delete the expired and those past the cap (oldest first)."""
    table = tables.retained_prompts
    now = retained.clock()
    async with store.transaction() as connection:
        if rows:
            values = [
                {
                    "request_id": row.request_id,
                    "subtask_id": row.subtask_id,
                    "capability": row.capability,
                    "at": row.at,
                    "text": row.text,
                }
                for row in rows
            ]
            await connection.execute(insert(table), values)
        await connection.execute(delete(table).where(table.c.at < now - retained.ttl_s))
        oldest_kept = await connection.scalar(
            select(table.c.seq).order_by(table.c.seq.desc()).offset(retained.max_rows - 1).limit(1)
        )
        if oldest_kept is not None:
            await connection.execute(delete(table).where(table.c.seq < oldest_kept))
    retained.purged(now)


async def load_retained(
    store: SqlStore, request_ids: set[str], ttl_s: float, now: float
) -> dict[tuple[str, str], RetainedPrompt]:
    """(request id, subtask id) → its retained prompt, for ``request_ids`` (unexpired only)."""
    table = tables.retained_prompts
    found: dict[tuple[str, str], RetainedPrompt] = {}
    ordered = sorted(request_ids)
    async with store.transaction() as connection:
        for start in range(0, len(ordered), 500):
            rows = await connection.execute(
                select(table)
                .where(table.c.request_id.in_(ordered[start : start + 500]))
                .where(table.c.at >= now - ttl_s)
                .order_by(table.c.seq)
            )
            for row in rows:
                found[(row.request_id, row.subtask_id)] = RetainedPrompt(
                    row.request_id, row.subtask_id, row.capability, row.at, row.text
                )
    return found


async def count_retained(store: SqlStore) -> int:
    """Rows the table holds now."""
    async with store.transaction() as connection:
        return int(
            await connection.scalar(select(func.count()).select_from(tables.retained_prompts)) or 0
        )
