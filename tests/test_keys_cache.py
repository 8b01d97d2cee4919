"""Key verification under concurrency: callers that miss the cache together share one check."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hybridinfer import keys as keys_module
from hybridinfer.errors import Unauthorized
from hybridinfer.keys import KeyRing
from hybridinfer.store.sql import SqlStore


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqlStore]:
    store = SqlStore(f"sqlite+aiosqlite:///{tmp_path / 'keys.db'}")
    await store.migrate()
    yield store
    await store.close()


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every scrypt check the key ring runs, by the key it checked."""
    seen: list[str] = []
    real = keys_module.verify_key

    def counted(key: str, hashed: str) -> bool:
        seen.append(key)
        return real(key, hashed)

    monkeypatch.setattr(keys_module, "verify_key", counted)
    return seen


async def test_concurrent_misses_run_one_scrypt_check(store: SqlStore, checks: list[str]) -> None:
    ring = KeyRing(store, None)
    key = await ring.create("busy", {"infer"})
    principals = await asyncio.gather(*(ring.authenticate(key) for _ in range(20)))
    assert len(checks) == 1
    assert {principal.key_id for principal in principals} == {principals[0].key_id}
    await ring.authenticate(key)  # cached now
    assert len(checks) == 1


async def test_an_unknown_key_is_refused_to_every_concurrent_caller_and_not_cached(
    store: SqlStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    ring = KeyRing(store, None)
    lookups: list[str] = []
    real = store.get_key

    async def counted(key_id: str) -> dict[str, object] | None:
        lookups.append(key_id)
        return await real(key_id)

    monkeypatch.setattr(store, "get_key", counted)
    results = await asyncio.gather(
        *(ring.authenticate("hi_unknown") for _ in range(5)), return_exceptions=True
    )
    assert all(isinstance(result, Unauthorized) for result in results)
    assert len(lookups) == 1
    with pytest.raises(Unauthorized):
        await ring.authenticate("hi_unknown")
    assert len(lookups) == 2
