"""Reading names: each text read once per process, remembered by digest, failures not kept."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from hybridinfer.decompose.names import MAX_BATCH, NameCheck
from hybridinfer.privacy.findings import Finding


class Finder:
    """Finds 'Jane' as a name; counts the texts it read; can be broken."""

    def __init__(self) -> None:
        self.read: list[str] = []
        self.broken = False

    def load(self) -> None:
        return None

    def find(self, text: str) -> list[Finding]:
        if self.broken:
            raise RuntimeError("the model is gone")
        self.read.append(text)
        start = text.find("Jane")
        return [] if start < 0 else [Finding("NAME", start, start + 4, "Jane", "ner")]

    def find_many(self, texts: list[str]) -> list[list[Finding]]:
        return [self.find(text) for text in texts]


def deadline() -> float:
    return time.monotonic() + 5.0


async def test_a_conversation_resent_each_turn_reads_each_message_once() -> None:
    finder = Finder()
    check = NameCheck(finder)
    history = ["You are a helpful assistant.", "Jane asked about her order."]
    assert await check.kinds_in(history, 1.0, deadline()) == ["NAME"]
    history.append("Thanks, what else?")
    assert await check.kinds_in(history, 1.0, deadline()) == ["NAME"]  # remembered, not lost
    assert finder.read == [*history[:2], history[2]]
    assert check.reads == 3


async def test_only_digests_and_kinds_are_kept_and_the_oldest_go_first() -> None:
    finder = Finder()
    check = NameCheck(finder, remembered=2)
    for text in ("Jane one", "two", "three"):
        await check.kinds_in(text, 1.0, deadline())
    kept = check._readings
    assert len(kept) == 2
    assert all(isinstance(key, bytes) and len(key) == 16 for key in kept)
    assert all("Jane" not in repr(value) for value in kept.values())
    await check.kinds_in("Jane one", 1.0, deadline())  # dropped first, so read again
    assert finder.read.count("Jane one") == 2


async def test_a_failed_reading_is_not_remembered() -> None:
    finder = Finder()
    check = NameCheck(finder)
    finder.broken = True
    with pytest.raises(RuntimeError):
        await check.kinds_in("Jane wrote", 1.0, deadline())
    with pytest.raises(RuntimeError):  # fails closed again: nothing was kept
        await check.kinds_in("Jane wrote", 1.0, deadline())
    finder.broken = False
    assert await check.kinds_in("Jane wrote", 1.0, deadline()) == ["NAME"]


async def test_remembering_nothing_reads_every_time() -> None:
    finder = Finder()
    check = NameCheck(finder, remembered=0)
    for _ in range(3):
        await check.kinds_in("Jane wrote", 1.0, deadline())
    assert len(finder.read) == 3


async def test_texts_read_before_are_answered_without_waiting_for_the_thread() -> None:
    """While the check's one thread is stuck on a new text, a request whose texts were all
    read before is answered at once; one new text among them still waits (and times out)."""
    finder = Finder()
    check = NameCheck(finder)
    assert await check.kinds_in(["Jane wrote", "hello"], 1.0, deadline()) == ["NAME"]
    stuck = threading.Event()
    original = finder.find
    finder.find = lambda text: (stuck.wait(5.0), original(text))[1]  # type: ignore[method-assign]
    blocked = asyncio.ensure_future(check.kinds_in("a new text", 5.0, deadline()))
    await asyncio.sleep(0.05)
    assert await asyncio.wait_for(
        check.kinds_in(["hello", "Jane wrote"], 1.0, deadline()), 0.5
    ) == ["NAME"]
    with pytest.raises(TimeoutError):
        await check.kinds_in(["hello", "another new text"], 0.1, deadline())
    stuck.set()
    assert await blocked == []
    assert check.reads == 3  # "Jane wrote", "hello", "a new text"; the repeat read nothing


async def test_without_a_model_remembered_texts_still_fail_closed() -> None:
    check = NameCheck(None)
    with pytest.raises(LookupError):
        await check.kinds_in("hello", 1.0, deadline())


class BatchFinder(Finder):
    """Reads texts in passes (``find_many``), recording each pass; can be held mid-pass."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[list[str]] = []
        self.hold = threading.Event()
        self.hold.set()
        self.started = threading.Event()

    def find_many(self, texts: list[str]) -> list[list[Finding]]:
        self.started.set()
        self.hold.wait(5.0)
        self.batches.append(list(texts))
        return super().find_many(texts)


async def held_pass(check: NameCheck, finder: BatchFinder, text: str) -> asyncio.Future[list[str]]:
    """A request whose new ``text`` is in a pass that is held until ``finder.hold`` is set."""
    finder.hold.clear()
    first = asyncio.ensure_future(check.kinds_in(text, 5.0, deadline()))
    assert await asyncio.to_thread(finder.started.wait, 5.0)
    return first


async def asked_during_a_pass(check: NameCheck, finder: BatchFinder, texts: list[str]) -> list[Any]:
    """The answers to a held first pass ("first") and to each of ``texts`` asked meanwhile."""
    first = await held_pass(check, finder, "first")
    later = [asyncio.ensure_future(check.kinds_in(text, 5.0, deadline())) for text in texts]
    await asyncio.sleep(0.01)
    finder.hold.set()
    return list(await asyncio.gather(first, *later))


async def test_texts_that_arrive_during_a_pass_are_read_together_in_the_next() -> None:
    finder = BatchFinder()
    check = NameCheck(finder)
    texts = [f"Jane number {n}" for n in range(5)]
    assert await asked_during_a_pass(check, finder, texts) == [[], *[["NAME"]] * 5]
    assert finder.batches == [["first"], texts]
    assert (check.reads, check.passes) == (6, 2)


async def test_a_pass_reads_at_most_max_batch_texts() -> None:
    finder = BatchFinder()
    check = NameCheck(finder)
    await asked_during_a_pass(check, finder, [f"text {n}" for n in range(MAX_BATCH + 3)])
    assert [len(batch) for batch in finder.batches] == [1, MAX_BATCH, 3]


async def test_one_asker_giving_up_does_not_fail_another_asking_for_the_same_text() -> None:
    finder = BatchFinder()
    check = NameCheck(finder)
    first = await held_pass(check, finder, "first")
    patient = asyncio.ensure_future(check.kinds_in("Jane again", 5.0, deadline()))
    with pytest.raises(TimeoutError):
        await check.kinds_in("Jane again", 0.05, deadline())
    finder.hold.set()
    assert await patient == ["NAME"]
    await first
    assert finder.read.count("Jane again") == 1


async def test_a_text_nobody_waits_for_any_more_is_not_read() -> None:
    finder = BatchFinder()
    check = NameCheck(finder)
    first = await held_pass(check, finder, "first")
    with pytest.raises(TimeoutError):
        await check.kinds_in("given up", 0.05, deadline())
    finder.hold.set()
    await first
    await asyncio.sleep(0.05)
    assert "given up" not in finder.read
    assert check.reads == 1


async def test_a_pass_that_fails_fails_each_of_its_texts_and_keeps_nothing() -> None:
    finder = BatchFinder()
    check = NameCheck(finder)
    first = await held_pass(check, finder, "first")
    finder.broken = True
    both = [asyncio.ensure_future(check.kinds_in(t, 5.0, deadline())) for t in ("a b", "Jane")]
    await asyncio.sleep(0.01)
    finder.hold.set()
    with pytest.raises(RuntimeError):
        await first
    for request in both:
        with pytest.raises(RuntimeError):
            await request
    finder.broken = False
    assert await check.kinds_in(["a b", "Jane"], 1.0, deadline()) == ["NAME"]
