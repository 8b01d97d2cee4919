"""The relational store on SQLAlchemy 2 (async): SQLite by default, PostgreSQL for real."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import orjson
from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, Row, delete, event, insert, select, text, update
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from hybridinfer.errors import StoreConflict, StoreUnavailable
from hybridinfer.store import tables
from hybridinfer.store.tracewriter import BATCH, SqliteTraceWriter

MIGRATIONS = Path(__file__).resolve().parent / "migrations"


def record_of(row: Row[*tuple[Any, ...]]) -> dict[str, Any]:
    """A row as a plain dict. Keys are made plain ``str``: on PostgreSQL they arrive as
    SQLAlchemy's ``quoted_name`` (a str subclass), which orjson refuses as a dict key."""
    return {str(key): value for key, value in row._mapping.items()}


MIGRATION_LOCK = 0x68796272  # "hybr": the advisory lock replicas migrate under


def _enable_sqlite_wal(dbapi_connection: Any, _record: Any) -> None:
    # WAL lets readers (trace lookups) run while the trace writer commits.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def _upgrade(connection: Connection) -> None:
    if connection.dialect.name == "postgresql":
        # Replicas starting together migrate one at a time; the lock ends with the transaction,
        # and whoever comes second finds the schema at head and does nothing.
        connection.execute(text("SELECT pg_advisory_xact_lock(:lock)"), {"lock": MIGRATION_LOCK})
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    command.upgrade(config, "head")


class SqlStore:
    """Keys, nodes, requests (traces) and decisions, behind one async engine."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._traces: SqliteTraceWriter | None = None
        self.trace_batch_size = 200
        """The most traces ``save_traces`` should be given at once."""
        if url.startswith("sqlite"):
            path = url.split("///", 1)[-1]
            if path and path != ":memory:":
                Path(path).parent.mkdir(parents=True, exist_ok=True)
                if "?" not in path:  # a plain file: trace rows skip aiosqlite's thread
                    self._traces = SqliteTraceWriter(path)
                    self.trace_batch_size = BATCH
        # A pooled PostgreSQL connection can die with its server and is pinged on checkout. A
        # SQLite one is a file handle: the ping would cost four round trips to aiosqlite's
        # thread (and four wake-ups of the event loop) per transaction for nothing.
        sqlite = url.startswith("sqlite")
        self._engine: AsyncEngine = create_async_engine(url, pool_pre_ping=not sqlite)
        if sqlite:
            event.listen(self._engine.sync_engine, "connect", _enable_sqlite_wal)

    @asynccontextmanager
    async def _begin(self) -> AsyncIterator[AsyncConnection]:
        try:
            async with self._engine.begin() as connection:
                yield connection
        except IntegrityError as exc:
            raise StoreConflict("the row exists already") from exc
        except SQLAlchemyError as exc:
            cause = getattr(exc, "orig", None) or exc
            detail = str(cause).splitlines()[0][:200] if str(cause) else ""
            raise StoreUnavailable(
                f"store error: {type(cause).__name__}: {detail}".rstrip(": ")
            ) from exc
        except OSError as exc:
            raise StoreUnavailable(f"store unreachable: {exc.strerror or exc}") from exc

    def transaction(self) -> AbstractAsyncContextManager[AsyncConnection]:
        """One transaction; errors mapped (StoreUnavailable, StoreConflict)."""
        return self._begin()

    async def migrate(self) -> None:
        """Bring the schema to the newest Alembic revision."""
        async with self._begin() as connection:
            await connection.run_sync(_upgrade)

    async def ping(self) -> bool:
        try:
            async with self._begin() as connection:
                await connection.execute(text("SELECT 1"))
        except StoreUnavailable:
            return False
        return True

    async def close(self) -> None:
        if self._traces is not None:
            self._traces.close()
        await self._engine.dispose()

    # keys

    async def add_key(
        self,
        key_id: str,
        name: str,
        hashed: str,
        scopes: Sequence[str],
        rate_limit_per_minute: int | None = None,
        budget: float | None = None,
    ) -> None:
        async with self._begin() as connection:
            await connection.execute(
                insert(tables.api_keys).values(
                    id=key_id,
                    name=name,
                    hash=hashed,
                    scopes=" ".join(sorted(scopes)),
                    created_at=time.time(),
                    rate_limit_per_minute=rate_limit_per_minute,
                    budget=budget,
                )
            )

    async def list_keys(self) -> list[dict[str, Any]]:
        """Every key record, oldest first."""
        query = select(tables.api_keys).order_by(tables.api_keys.c.created_at)
        async with self._begin() as connection:
            return [record_of(row) for row in await connection.execute(query)]

    async def expire_key(self, key_id: str, expires_at: float, replaced_by: str) -> None:
        """A rotated key: refused from ``expires_at`` on, succeeded by ``replaced_by``."""
        async with self._begin() as connection:
            await connection.execute(
                update(tables.api_keys)
                .where(tables.api_keys.c.id == key_id)
                .values(expires_at=expires_at, replaced_by=replaced_by)
            )

    async def get_key(self, key_id: str) -> dict[str, Any] | None:
        async with self._begin() as connection:
            row = (
                await connection.execute(
                    select(tables.api_keys).where(tables.api_keys.c.id == key_id)
                )
            ).first()
        return None if row is None else record_of(row)

    async def revoke_key(self, key_id: str) -> bool:
        async with self._begin() as connection:
            result = await connection.execute(
                update(tables.api_keys)
                .where(tables.api_keys.c.id == key_id, tables.api_keys.c.revoked_at.is_(None))
                .values(revoked_at=time.time())
            )
        return bool(result.rowcount)

    async def has_admin_key(self) -> bool:
        async with self._begin() as connection:
            rows = await connection.execute(
                select(tables.api_keys.c.scopes).where(tables.api_keys.c.revoked_at.is_(None))
            )
            return any("admin" in row.scopes.split() for row in rows)

    # nodes

    async def save_node(self, node_id: str, tier: str, zone: str, url: str, body: bytes) -> None:
        async with self._begin() as connection:
            await connection.execute(delete(tables.nodes).where(tables.nodes.c.id == node_id))
            await connection.execute(
                insert(tables.nodes).values(
                    id=node_id,
                    tier=tier,
                    zone=zone,
                    url=url,
                    registration=body.decode(),
                    registered_at=time.time(),
                )
            )

    async def list_nodes(self) -> list[dict[str, Any]]:
        """Every stored registration (``id``, ``registration`` JSON, ``registered_at``)."""
        query = select(tables.nodes.c.id, tables.nodes.c.registration, tables.nodes.c.registered_at)
        async with self._begin() as connection:
            return [record_of(row) for row in await connection.execute(query)]

    # requests, traces and decisions

    async def save_traces(self, traces: Sequence[dict[str, Any]]) -> None:
        """Write a batch of finished traces in one transaction."""
        request_rows = [
            {
                "request_id": trace["request_id"],
                "task": trace["task"],
                "status": trace["status"],
                "key_id": trace.get("key_id"),
                "created_at": trace["created_at"],
                "total_ms": trace["timings_ms"].get("total", 0.0),
                "trace": orjson.dumps(trace).decode(),
            }
            for trace in traces
        ]
        decision_rows = [
            {
                "request_id": trace["request_id"],
                "subtask_id": decision["subtask"],
                "deployment": decision["chosen"],
                "tier": decision["tier"],
                "policy_version": decision["policy_version"],
                "reason": decision["reason"],
            }
            for trace in traces
            for decision in trace["decisions"]
        ]
        if self._traces is not None:
            await self._traces.write(request_rows, decision_rows)
            return
        if self._engine.dialect.name == "postgresql":
            await self._copy_traces(request_rows, decision_rows)
            return
        async with self._begin() as connection:
            await connection.execute(insert(tables.requests), request_rows)
            if decision_rows:
                await connection.execute(insert(tables.decisions), decision_rows)

    async def _copy_traces(
        self, request_rows: list[dict[str, Any]], decision_rows: list[dict[str, Any]]
    ) -> None:
        """Trace rows into PostgreSQL by ``COPY`` in one transaction. Against ``INSERT`` per
        row (what executemany sends), it saves the server a statement per row and the
        gateway SQLAlchemy's per-row parameter handling: the trace rows are written all the
        time, and on a shared core both weigh on the request path."""
        import asyncpg  # the scale extra's driver: only a PostgreSQL store gets here

        try:
            async with self._engine.connect() as connection:
                raw = await connection.get_raw_connection()
                driver: asyncpg.Connection = raw.driver_connection
                async with driver.transaction():
                    for table, rows in (
                        (tables.requests, request_rows),
                        (tables.decisions, decision_rows),
                    ):
                        if rows:
                            columns = list(rows[0])
                            records = [tuple(row[name] for name in columns) for row in rows]
                            await driver.copy_records_to_table(
                                table.name, records=records, columns=columns
                            )
        except (asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            detail = str(exc).splitlines()[0][:200] if str(exc) else ""
            raise StoreUnavailable(f"store error: {type(exc).__name__}: {detail}") from exc
        except SQLAlchemyError as exc:
            raise StoreUnavailable(f"store error: {type(exc).__name__}") from exc
        except OSError as exc:
            raise StoreUnavailable(f"store unreachable: {exc.strerror or exc}") from exc

    async def get_trace(self, request_id: str) -> dict[str, Any] | None:
        async with self._begin() as connection:
            row = (
                await connection.execute(
                    select(tables.requests.c.trace)
                    .where(tables.requests.c.request_id == request_id)
                    .order_by(tables.requests.c.id.desc())
                    .limit(1)
                )
            ).first()
        return None if row is None else dict(orjson.loads(row.trace))

    async def list_traces(self, limit: int, status: str | None) -> list[dict[str, Any]]:
        query = select(tables.requests.c.trace).order_by(tables.requests.c.created_at.desc())
        if status is not None:
            query = query.where(tables.requests.c.status == status)
        async with self._begin() as connection:
            rows = await connection.execute(query.limit(limit))
            return [dict(orjson.loads(row.trace)) for row in rows]

    # policies

    async def add_policy(
        self, version: str, body: str, thresholds: dict[str, float], author: str | None
    ) -> None:
        """Store a policy version and make it the only active one."""
        now = time.time()
        async with self._begin() as connection:
            await connection.execute(
                update(tables.policies)
                .where(tables.policies.c.status == "active")
                .values(status="retired")
            )
            await connection.execute(
                insert(tables.policies).values(
                    version=version,
                    body=body,
                    status="active",
                    thresholds=orjson.dumps(thresholds).decode(),
                    author=author,
                    created_at=now,
                    activated_at=now,
                )
            )

    async def activate_policy(self, version: str) -> bool:
        async with self._begin() as connection:
            found = (
                await connection.execute(
                    select(tables.policies.c.version).where(tables.policies.c.version == version)
                )
            ).first()
            if found is None:
                return False
            await connection.execute(
                update(tables.policies)
                .where(tables.policies.c.status == "active")
                .values(status="retired")
            )
            await connection.execute(
                update(tables.policies)
                .where(tables.policies.c.version == version)
                .values(status="active", activated_at=time.time())
            )
        return True

    async def get_policy(self, version: str) -> dict[str, Any] | None:
        async with self._begin() as connection:
            row = (
                await connection.execute(
                    select(tables.policies).where(tables.policies.c.version == version)
                )
            ).first()
        return None if row is None else record_of(row)

    async def active_policy_version(self) -> str | None:
        async with self._begin() as connection:
            row = (
                await connection.execute(
                    select(tables.policies.c.version).where(tables.policies.c.status == "active")
                )
            ).first()
        return None if row is None else str(row.version)

    async def list_policies(self) -> list[dict[str, Any]]:
        query = select(
            tables.policies.c.version,
            tables.policies.c.status,
            tables.policies.c.author,
            tables.policies.c.created_at,
            tables.policies.c.activated_at,
        ).order_by(tables.policies.c.created_at.desc())
        async with self._begin() as connection:
            return [record_of(row) for row in await connection.execute(query)]
