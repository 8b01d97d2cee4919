"""Trace rows into a SQLite file from the event loop's own thread.

The rest of the store reaches SQLite through aiosqlite, which runs every statement on a thread
of its own. For the trace rows, written all the time, that thread and a busy event loop pass the
GIL back and forth at every SQLite step: measured in one process with the loop kept busy
(2 cores), the thread wrote 80 to 160 traces in 6 s where the loop thread itself wrote 2,400, and
the process made ~35,000 context switches a second doing it. Inserted on the loop's thread a
trace costs 20 to 30 µs and no hand-off; the batches are kept small (``BATCH``) so one holds the
loop well under a millisecond.

Two waits would stall the loop and are kept off it:

- another connection's write lock: this connection does not wait for one (busy timeout 0); a
  batch that finds the database locked is written from a worker thread that waits;
- checkpoints (copying the write-ahead log into the database, with an fsync): this connection
  never checkpoints on commit; a worker thread does it every ``CHECKPOINT_EVERY`` traces.
"""

from __future__ import annotations

import asyncio
import functools
import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import Table, bindparam, insert
from sqlalchemy.dialects import sqlite

from hybridinfer.errors import StoreUnavailable
from hybridinfer.store import tables

BATCH = 20
"""Traces per transaction: ~0.4 ms of the loop's time on a 2-core machine."""

CHECKPOINT_EVERY = 500
"""Traces between checkpoints: ~1,000 pages of log, SQLite's own default interval."""

LOCK_WAIT_S = 5.0
"""How long the worker thread waits for another connection's write lock."""

Rows = Sequence[dict[str, Any]]


@functools.cache
def insert_sql(table: Table, columns: tuple[str, ...]) -> str:
    """The ``INSERT`` of ``columns`` into ``table`` with named parameters, from the table's
    own definition (``store/tables.py``), as the SQLAlchemy path writes it."""
    statement = insert(table).values({name: bindparam(name) for name in columns})
    return str(statement.compile(dialect=sqlite.dialect(paramstyle="named")))


class SqliteTraceWriter:
    """Writes trace and decision rows to one SQLite file; opened on first use."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._connection: sqlite3.Connection | None = None
        self._since_checkpoint = 0
        self._writing = asyncio.Lock()  # one batch at a time, whichever thread writes it

    async def write(self, requests: Rows, decisions: Rows) -> None:
        """Insert the rows in one transaction; raise ``StoreUnavailable`` if they are not."""
        if not requests:
            return
        async with self._writing:
            await self._write(requests, decisions)

    async def _write(self, requests: Rows, decisions: Rows) -> None:
        # Nothing is awaited once the rows are committed: a cancellation (the sink stopping)
        # must find them either written and reported so, or not written at all.
        try:
            connection = self._open()
            if self._since_checkpoint >= CHECKPOINT_EVERY:
                self._since_checkpoint = 0
                await _off_loop(_checkpoint, connection)
            try:
                self._insert(connection, requests, decisions)
            except sqlite3.OperationalError as exc:
                if not _locked(exc):
                    raise
                await _off_loop(self._insert_waiting, connection, requests, decisions)
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"store error: {type(exc).__name__}: {exc}") from exc
        self._since_checkpoint += len(requests)

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def _open(self) -> sqlite3.Connection:
        if self._connection is None:
            connection = sqlite3.connect(
                self._path, timeout=0, isolation_level=None, check_same_thread=False
            )
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=NORMAL")
            connection.execute("PRAGMA wal_autocheckpoint=0")
            self._connection = connection
        return self._connection

    @staticmethod
    def _insert(connection: sqlite3.Connection, requests: Rows, decisions: Rows) -> None:
        connection.execute("BEGIN IMMEDIATE")  # the write lock now, not at the first INSERT
        try:
            connection.executemany(insert_sql(tables.requests, tuple(requests[0])), requests)
            if decisions:
                connection.executemany(insert_sql(tables.decisions, tuple(decisions[0])), decisions)
            connection.execute("COMMIT")
        except BaseException:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise

    def _insert_waiting(
        self, connection: sqlite3.Connection, requests: Rows, decisions: Rows
    ) -> None:
        connection.execute(f"PRAGMA busy_timeout={int(LOCK_WAIT_S * 1000)}")
        try:
            self._insert(connection, requests, decisions)
        finally:
            connection.execute("PRAGMA busy_timeout=0")


def _locked(exc: sqlite3.OperationalError) -> bool:
    code = getattr(exc, "sqlite_errorcode", 0) & 0xFF  # the primary code of an extended one
    return code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


async def _off_loop(function: Callable[..., None], *args: Any) -> None:
    """``function(*args)`` on a worker thread. Cancelled, it still waits for the thread to end:
    the connection is the thread's until then."""
    work = asyncio.ensure_future(asyncio.to_thread(function, *args))
    try:
        await asyncio.shield(work)
    except asyncio.CancelledError:
        await asyncio.wait([work])
        raise


def _checkpoint(connection: sqlite3.Connection) -> None:
    connection.execute("PRAGMA wal_checkpoint(PASSIVE)")
