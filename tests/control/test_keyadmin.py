"""``KeyService``: each key change is made and audited in one call, on a real SQLite store."""

from __future__ import annotations

import pytest

from hybridinfer.control.audit import AuditLog
from hybridinfer.control.keyadmin import KeyService
from hybridinfer.control.keys import KeyRing, key_id_of
from hybridinfer.errors import NotFound, Unauthorized
from hybridinfer.store.sql import SqlStore


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def ring(store: SqlStore, clock: Clock) -> KeyRing:
    return KeyRing(store, node_token=None, cache_ttl_s=0.0, clock=clock)


@pytest.fixture
def keys(ring: KeyRing, store: SqlStore) -> KeyService:
    return KeyService(ring, AuditLog(store), rotation_grace_s=60.0)


async def test_create_shows_the_key_once_and_audits_only_the_record(
    keys: KeyService, ring: KeyRing, store: SqlStore
) -> None:
    created = await keys.create("app", {"infer"}, "admin-1", rate_limit_per_minute=5, budget=2.0)

    key = created["key"]
    assert created["id"] == key_id_of(key)
    assert (created["scopes"], created["rate_limit_per_minute"], created["budget"]) == (
        ["infer"],
        5,
        2.0,
    )
    assert (await ring.authenticate(key)).key_id == created["id"]
    [entry] = await AuditLog(store).list()
    assert (entry["actor"], entry["action"], entry["target"]) == (
        "admin-1",
        "key.create",
        key_id_of(key),
    )
    assert entry["before"] is None
    assert entry["after"]["name"] == "app"
    assert key not in str(entry)  # the key itself never reaches the audit log
    assert all("key" not in record for record in await keys.list())


async def test_rotate_uses_the_default_grace_and_audits_the_old_key(
    keys: KeyService, ring: KeyRing, store: SqlStore, clock: Clock
) -> None:
    old = (await keys.create("app", {"infer"}, "admin-1"))["key"]

    rotated = await keys.rotate(key_id_of(old), "admin-2")

    assert rotated["id"] == key_id_of(rotated["key"]) != key_id_of(old)
    newest = (await AuditLog(store).list())[0]
    assert (newest["action"], newest["actor"], newest["target"]) == (
        "key.rotate",
        "admin-2",
        key_id_of(old),
    )
    assert newest["before"]["expires_at"] is None
    assert newest["after"]["expires_at"] == clock.now + 60.0
    clock.now += 61.0
    with pytest.raises(Unauthorized):
        await ring.authenticate(old)
    assert (await ring.authenticate(rotated["key"])).key_id == rotated["id"]


async def test_rotate_takes_the_callers_grace(
    keys: KeyService, store: SqlStore, clock: Clock
) -> None:
    old = (await keys.create("app", {"infer"}, "admin-1"))["key"]
    await keys.rotate(key_id_of(old), "admin-1", grace_s=0.0)
    assert (await AuditLog(store).list())[0]["after"]["expires_at"] == clock.now


async def test_revoke_refuses_the_key_and_audits_before_and_after(
    keys: KeyService, ring: KeyRing, store: SqlStore
) -> None:
    key = (await keys.create("app", {"infer"}, "admin-1"))["key"]

    after = await keys.revoke(key_id_of(key), "admin-1")

    assert after["revoked_at"] is not None
    newest = (await AuditLog(store).list())[0]
    assert newest["action"] == "key.revoke"
    assert newest["before"]["revoked_at"] is None
    assert newest["after"] == after
    with pytest.raises(Unauthorized):
        await ring.authenticate(key)
    with pytest.raises(NotFound):
        await keys.revoke("no-such-key", "admin-1")
