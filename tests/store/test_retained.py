"""The retained prompt sample: nothing kept unless drawn, sensitive prompts only when allowed,
the table capped (oldest deleted first) and expired rows deleted and never read, on SQLite and
PostgreSQL."""

from __future__ import annotations

from hybridinfer.store.retained import (
    BUFFER,
    RetainedPrompts,
    count_retained,
    load_retained,
    save_retained,
)
from hybridinfer.store.sql import SqlStore


class Clock:
    def __init__(self) -> None:
        self.now = 10_000.4

    def __call__(self) -> float:
        return self.now


def sample(rate: float = 1.0, **bounds: float) -> tuple[RetainedPrompts, Clock]:
    clock = Clock()
    kept = RetainedPrompts(
        rate,
        int(bounds.get("max_rows", 100)),
        bounds.get("ttl_s", 3600.0),
        keep_sensitive=bool(bounds.get("keep_sensitive", False)),
        draw=lambda: 0.5,
        clock=clock,
    )
    return kept, clock


def test_a_prompt_is_kept_only_when_drawn_with_its_origin() -> None:
    kept, _ = sample(rate=0.5)  # the draw is 0.5: not below the rate
    assert not kept.offer("r-1", "chat", "chat", "hello there", sensitive=False)
    assert kept.buffered == 0
    kept.rate = 0.6
    assert kept.offer("r-1", "chat", "chat", "hello there", sensitive=False)
    (row,) = kept.drain()
    assert (row.request_id, row.subtask_id, row.capability, row.at, row.text) == (
        "r-1",
        "chat",
        "chat",
        10_000.0,
        "hello there",
    )


def test_a_request_scored_twice_is_kept_once_and_one_without_an_id_never() -> None:
    kept, _ = sample()
    assert kept.offer("r-1", "chat", "chat", "hello", sensitive=False)
    assert kept.offer("r-1", "chat", "chat", "hello", sensitive=False)
    assert not kept.offer("", "chat", "chat", "hello", sensitive=False)
    assert kept.buffered == 1


def test_a_sensitive_prompt_is_kept_only_when_the_switch_says_so() -> None:
    kept, _ = sample()
    assert not kept.offer("r-1", "chat", "chat", "call +44 161 496 0123", sensitive=True)
    kept.keep_sensitive = True
    assert kept.offer("r-1", "chat", "chat", "call +44 161 496 0123", sensitive=True)


def test_the_buffer_is_bounded_and_counts_what_it_drops() -> None:
    kept, _ = sample()
    for index in range(BUFFER + 5):
        kept.offer(f"r-{index}", "chat", "chat", "hi", sensitive=False)
    assert kept.buffered == BUFFER
    assert kept.dropped == 5


async def test_the_table_keeps_the_newest_rows_up_to_its_cap(store: SqlStore) -> None:
    kept, clock = sample(max_rows=3)
    for index in range(5):
        kept.offer(f"r-{index}", "chat", "chat", f"prompt {index}", sensitive=False)
        clock.now += 1.0
    await save_retained(store, kept, kept.drain())
    assert await count_retained(store) == 3
    found = await load_retained(store, {f"r-{i}" for i in range(5)}, 3600.0, clock.now)
    assert sorted(found) == [("r-2", "chat"), ("r-3", "chat"), ("r-4", "chat")]
    assert found[("r-4", "chat")].text == "prompt 4"


async def test_expired_rows_are_never_read_and_are_deleted(store: SqlStore) -> None:
    kept, clock = sample(ttl_s=60.0)
    kept.offer("old", "chat", "chat", "old prompt", sensitive=False)
    await save_retained(store, kept, kept.drain())
    clock.now += 61.0
    assert await load_retained(store, {"old"}, 60.0, clock.now) == {}
    assert await count_retained(store) == 1
    kept.offer("new", "chat", "chat", "new prompt", sensitive=False)
    await save_retained(store, kept, kept.drain())
    assert await count_retained(store) == 1
    assert list(await load_retained(store, {"old", "new"}, 60.0, clock.now)) == [("new", "chat")]
