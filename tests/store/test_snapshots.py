"""Signal snapshots: one per second per replica, computed once per key, written when the
second closes, read back by reference on SQLite and PostgreSQL."""

from __future__ import annotations

from hybridinfer.store.snapshots import SignalSnapshots, load_snapshots, save_snapshots
from hybridinfer.store.sql import SqlStore


class Clock:
    def __init__(self) -> None:
        self.now = 1000.2

    def __call__(self) -> float:
        return self.now


async def test_one_snapshot_per_second_computed_once_per_key(store: SqlStore) -> None:
    clock = Clock()
    book = SignalSnapshots(clock=clock)
    calls: list[str] = []

    def compute(value: float) -> dict[str, float]:
        calls.append(str(value))
        return {"rtt_ms": value}

    first = book.note("a", lambda: compute(1.0))
    assert book.note("a", lambda: compute(2.0)) == first
    assert book.note("b", lambda: compute(3.0)) == first
    assert calls == ["1.0", "3.0"]
    assert book.drain() == []  # the second is still open
    clock.now += 1.0
    later = book.note("a", lambda: compute(4.0))
    assert later != first
    rows = book.drain()
    await save_snapshots(store, rows)
    found = await load_snapshots(store, {first, later, "missing"})
    assert found == {first: {"a": {"rtt_ms": 1.0}, "b": {"rtt_ms": 3.0}}}
    await save_snapshots(store, book.drain(everything=True))
    assert (await load_snapshots(store, {later}))[later] == {"a": {"rtt_ms": 4.0}}


def test_open_seconds_are_bounded_when_the_store_is_away() -> None:
    clock = Clock()
    book = SignalSnapshots(capacity=3, clock=clock)
    for _ in range(5):
        book.note("a", dict)
        clock.now += 1.0
    assert len(book.drain()) == 3
    assert book.dropped == 2


async def test_a_replay_sees_the_open_second_and_its_later_decisions_are_kept(
    store: SqlStore,
) -> None:
    """A replay right after the last request (same second) finds its snapshot; decisions
    later in that second still reach the store when it closes (the row is rewritten)."""
    clock = Clock()
    book = SignalSnapshots(clock=clock)
    ref = book.note("a", lambda: {"rtt_ms": 1.0})
    assert book.drain() == []
    await save_snapshots(store, book.drain(open_too=True))
    assert await load_snapshots(store, {ref}) == {ref: {"a": {"rtt_ms": 1.0}}}
    assert book.note("b", lambda: {"rtt_ms": 2.0}) == ref  # the second is still open
    clock.now += 1.0
    await save_snapshots(store, book.drain())
    assert await load_snapshots(store, {ref}) == {ref: {"a": {"rtt_ms": 1.0}, "b": {"rtt_ms": 2.0}}}
