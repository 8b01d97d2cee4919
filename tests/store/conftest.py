"""Every SQL store backend, for the one shared suite (house rule 7): SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hybridinfer.store.sql import SqlStore
from tests.services import postgres_url

__all__ = ["postgres_url", "store", "store_url"]


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of a new, empty (unmigrated) database of each kind."""
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'state.db'}"
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
async def store(store_url: str) -> AsyncIterator[SqlStore]:
    """A migrated, empty store of each kind."""
    migrated = SqlStore(store_url)
    await migrated.migrate()
    yield migrated
    await migrated.close()
