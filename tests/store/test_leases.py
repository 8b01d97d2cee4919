"""Leases on SQLite and PostgreSQL: one holder at a time, renewals keep it, expiry or
release hands it over."""

from __future__ import annotations

from hybridinfer.store.leases import Lease
from hybridinfer.store.sql import SqlStore


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_one_holder_at_a_time_until_expiry_or_release(store: SqlStore) -> None:
    clock = Clock()
    first = Lease(store, "walk", "a", 3.0, clock)
    second = Lease(store, "walk", "b", 3.0, clock)
    assert await first.hold()
    assert not await second.hold()
    clock.now += 2.0
    assert await first.hold()  # renewed: good for 3 s more
    clock.now += 2.0
    assert not await second.hold()
    clock.now += 1.5  # the holder stopped renewing: expired
    assert await second.hold()
    assert not await first.hold()
    await second.release()
    assert await first.hold()
    assert await Lease(store, "other", "b", 3.0, clock).hold()  # names are independent


async def test_a_holder_asking_often_writes_about_once_a_third_of_the_lease(
    store: SqlStore,
) -> None:
    clock = Clock()
    lease = Lease(store, "walk", "a", 3.0, clock)
    assert await lease.hold()  # taken: held until 1003
    clock.now += 0.5
    writes = 0
    transaction = store.transaction

    def counted() -> object:
        nonlocal writes
        writes += 1
        return transaction()

    store.transaction = counted  # type: ignore[method-assign]
    for _ in range(12):  # asked every half second for 6 s more
        assert await lease.hold()
        clock.now += 0.5
    assert writes == 6  # renewed each second (at 1001, 1002, ... 1006), not on every ask
    assert await Lease(store, "walk", "b", 3.0, clock).leader() == "a"
