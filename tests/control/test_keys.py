"""API keys on a real SQLite store: scopes, node credentials apart, rotation with a grace period."""

from __future__ import annotations

import pytest

from hybridinfer.control.keys import KeyRing, hash_key, key_id_of, verify_key
from hybridinfer.errors import InvalidInput, NotFound, Unauthorized
from hybridinfer.store.sql import SqlStore


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_hashes_are_salted_scrypt_and_verify() -> None:
    first, second = hash_key("hi_secret"), hash_key("hi_secret")
    assert first.startswith("scrypt$16384$")
    assert first != second
    assert verify_key("hi_secret", first)
    assert verify_key("hi_secret", second)
    assert not verify_key("hi_other", first)
    assert "hi_secret" not in first


async def test_admin_does_not_imply_node_and_node_keys_carry_nothing_else(
    store: SqlStore,
) -> None:
    keys = KeyRing(store, node_token="tok-node")
    admin = await keys.authenticate(await keys.create("ops", {"admin"}))
    node = await keys.authenticate("tok-node")
    assert admin.allows("infer")
    assert admin.allows("admin")
    assert not admin.allows("node")
    assert node.allows("node")
    assert not node.allows("infer")
    assert not node.allows("admin")
    with pytest.raises(InvalidInput, match="only the 'node' scope"):
        await keys.create("mixed", {"node", "infer"})
    with pytest.raises(InvalidInput, match="unknown scopes"):
        await keys.create("odd", {"root"})


async def test_limits_travel_with_the_key(store: SqlStore) -> None:
    keys = KeyRing(store, None)
    key = await keys.create("app", {"infer"}, rate_limit_per_minute=5, budget=0.25)
    principal = await keys.authenticate(key)
    assert (principal.rate_limit_per_minute, principal.budget) == (5, 0.25)
    assert keys.budget_of(principal.key_id) == 0.25
    listed = await keys.list()
    assert [k["id"] for k in listed] == [key_id_of(key)]
    assert "hash" not in listed[0]
    assert listed[0]["scopes"] == ["infer"]


async def test_rotation_keeps_the_old_key_for_the_grace_period_then_refuses_it(
    store: SqlStore,
) -> None:
    clock = Clock()
    keys = KeyRing(store, None, clock=clock)
    old = await keys.create("app", {"infer"}, rate_limit_per_minute=7)
    await keys.authenticate(old)  # cached before the rotation: the cache must not outlive it
    new = await keys.rotate(key_id_of(old), grace_s=60.0)

    clock.now += 59.0
    assert (await keys.authenticate(old)).key_id == key_id_of(old)
    rotated = await keys.authenticate(new)
    assert rotated.scopes == frozenset({"infer"})
    assert rotated.rate_limit_per_minute == 7

    clock.now += 2.0
    with pytest.raises(Unauthorized):
        await keys.authenticate(old)
    assert (await keys.authenticate(new)).key_id == key_id_of(new)
    record = await keys.get(key_id_of(old))
    assert record["replaced_by"] == key_id_of(new)
    with pytest.raises(NotFound):
        await keys.rotate(key_id_of(old), grace_s=60.0)  # expired: nothing to rotate


async def test_revocation_is_immediate_even_for_a_cached_key(store: SqlStore) -> None:
    keys = KeyRing(store, None)
    key = await keys.create("temp", {"infer"})
    await keys.authenticate(key)
    assert await keys.revoke(key_id_of(key))
    with pytest.raises(Unauthorized):
        await keys.authenticate(key)
