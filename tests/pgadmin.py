"""Create and drop throw-away PostgreSQL databases for tests (asyncpg, autocommit)."""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit


def _dsn(url: str) -> str:
    parts = urlsplit(url.replace("+asyncpg", ""))
    return parts.geturl()


async def _execute(url: str, statement: str) -> None:
    import asyncpg

    connection = await asyncpg.connect(_dsn(url), timeout=10)
    try:
        await connection.execute(statement)
    finally:
        await connection.close()


def create_database(url: str, name: str) -> None:
    asyncio.run(_execute(url, f'CREATE DATABASE "{name}"'))


def drop_database(url: str, name: str) -> None:
    asyncio.run(_execute(url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
