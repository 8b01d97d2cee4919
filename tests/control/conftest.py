"""Fixtures of the control services' tests: a migrated store, SQLite unless a test asks for
every backend (``indirect`` parametrisation of ``store_url``, as the audit log's tests do)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hybridinfer.store.sql import SqlStore
from tests.services import postgres_url

__all__ = ["postgres_url", "store", "store_url"]


@pytest.fixture
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of a new, empty database: SQLite, or ``request.param`` (sqlite, postgresql)."""
    if getattr(request, "param", "sqlite") == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'state.db'}"
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
async def store(store_url: str) -> AsyncIterator[SqlStore]:
    """A migrated, empty store."""
    migrated = SqlStore(store_url)
    await migrated.migrate()
    yield migrated
    await migrated.close()
