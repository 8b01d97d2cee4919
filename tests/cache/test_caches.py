"""The shared cache suite: every test runs on the memory cache and on Redis."""

from __future__ import annotations

import asyncio

from hybridinfer.cache.base import Cache, Counter


async def test_values_are_stored_replaced_and_deleted(cache: Cache) -> None:
    assert await cache.get("a") is None
    await cache.set("a", b"1")
    await cache.set("a", b"2")
    assert await cache.get("a") == b"2"
    await cache.delete("a")
    await cache.delete("a")
    assert await cache.get("a") is None
    assert await cache.ping()


async def test_values_expire(cache: Cache) -> None:
    await cache.set("short", b"x", ttl_s=0.2)
    await cache.set("long", b"y", ttl_s=30)
    await asyncio.sleep(0.4)
    assert await cache.get("short") is None
    assert await cache.get("long") == b"y"


async def test_racing_adds_get_exactly_what_fits(cache: Cache) -> None:
    counter = Counter("requests", limit=10)
    additions = await asyncio.gather(*(cache.add_within([counter], 1, 60) for _ in range(40)))
    assert sum(addition.granted for addition in additions) == 10
    assert await cache.read(["requests", "absent"]) == (10.0, 0.0)


async def test_an_add_over_several_counters_is_all_or_nothing(cache: Cache) -> None:
    wide, narrow = Counter("global", limit=1.0), Counter("per-key", limit=0.0005)
    first = await cache.add_within([wide, narrow], 0.0002, 60)
    second = await cache.add_within([wide, narrow], 0.0002, 60)
    third = await cache.add_within([wide, narrow], 0.0002, 60)  # the per-key one is full
    assert (first.granted, second.granted, third.granted) == (True, True, False)
    assert third.values == (0.0004, 0.0004) or all(
        abs(value - 0.0004) < 1e-12 for value in third.values
    )
    back = await cache.add_within([Counter("global"), Counter("per-key")], -0.0002, 60)
    assert back.granted
    assert abs(back.values[1] - 0.0002) < 1e-12


async def test_counters_expire_with_their_window(cache: Cache) -> None:
    await cache.add_within([Counter("window", 1)], 1, ttl_s=0.2)
    assert not (await cache.add_within([Counter("window", 1)], 1, ttl_s=0.2)).granted
    await asyncio.sleep(0.4)
    assert (await cache.add_within([Counter("window", 1)], 1, ttl_s=0.2)).granted


async def test_racing_takes_get_exactly_what_fits(cache: Cache) -> None:
    taken = await asyncio.gather(*(cache.take("units", 7, 100, 60) for _ in range(30)))
    assert sum(taken) == 100
    assert all(units in (0, 7) or 0 < units < 7 for units in taken)
    assert await cache.read(["units"]) == (100.0,)


async def test_a_take_keeps_the_slack_free_then_goes_one_by_one(cache: Cache) -> None:
    assert await cache.take("slack", 50, 100, 60, slack=30) == 50
    assert await cache.take("slack", 50, 100, 60, slack=30) == 20  # leaves 30 free
    assert await cache.take("slack", 50, 100, 60, slack=30) == 1  # within the slack: one
    assert await cache.read(["slack"]) == (71.0,)


async def test_a_take_gives_back_before_it_takes(cache: Cache) -> None:
    assert await cache.take("back", 10, 10, 60) == 10
    assert await cache.take("back", 5, 10, 60) == 0
    assert await cache.take("back", 5, 10, 60, give_back=3) == 3
    assert await cache.take("back", 0, 10, 60, give_back=20) == 0  # never below zero
    assert await cache.read(["back"]) == (0.0,)
    assert await cache.take("absent", 0, 10, 60, give_back=4) == 0
    assert await cache.read(["absent"]) == (0.0,)


async def test_taken_units_expire_with_their_window(cache: Cache) -> None:
    assert await cache.take("w", 1, 1, ttl_s=0.2) == 1
    assert await cache.take("w", 1, 1, ttl_s=0.2) == 0
    await asyncio.sleep(0.4)
    assert await cache.take("w", 1, 1, ttl_s=0.2) == 1
