"""Key verification under concurrency: callers that miss the cache together share one check."""

from __future__ import annotations

import asyncio
import time

import pytest

from hybridinfer.control import keys as keys_module
from hybridinfer.control.keys import KeyRing, key_id_of
from hybridinfer.errors import Unauthorized
from hybridinfer.store.sql import SqlStore


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


async def test_an_expired_entry_answers_at_once_and_is_checked_behind(
    store: SqlStore, checks: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    counted = keys_module.verify_key

    def slow(key: str, hashed: str) -> bool:
        time.sleep(0.2)  # a check on a busy machine
        return counted(key, hashed)

    monkeypatch.setattr(keys_module, "verify_key", slow)
    ring = KeyRing(store, None, cache_ttl_s=0.5)
    key = await ring.create("busy", {"infer"})
    first = await ring.authenticate(key)
    assert len(checks) == 1
    await asyncio.sleep(0.6)  # expired (stamped before its 0.27 s check), within one more TTL
    started = time.monotonic()
    again = await ring.authenticate(key)
    assert time.monotonic() - started < 0.1  # the check does not run on the caller's time
    assert again == first
    for _ in range(100):  # the check behind it
        if len(checks) == 2 and not ring._verifying:
            break
        await asyncio.sleep(0.01)
    assert len(checks) == 2


async def test_a_key_revoked_elsewhere_is_refused_after_the_check_behind(
    store: SqlStore, checks: list[str]
) -> None:
    ring = KeyRing(store, None, cache_ttl_s=0.2)
    key = await ring.create("leaving", {"infer"})
    await ring.authenticate(key)
    await KeyRing(store, None).revoke(key_id_of(key))  # another replica's ring
    await asyncio.sleep(0.25)
    await ring.authenticate(key)  # answered from the entry; the check behind finds it revoked
    for _ in range(100):
        if not ring._verifying:
            break
        await asyncio.sleep(0.01)
    with pytest.raises(Unauthorized):
        await ring.authenticate(key)
    await asyncio.sleep(0.45)  # past both TTLs: looked up again, still refused
    with pytest.raises(Unauthorized):
        await ring.authenticate(key)
