"""The shared suite of answer stores (memory and Redis), and what only one of them does."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from hybridinfer.answers.base import Answer, AnswerStore, Vector
from hybridinfer.answers.memory import MemoryAnswers
from hybridinfer.answers.redis import RedisAnswers
from tests.services import unique


def answer(label: str = "positive", request_id: str = "r1") -> Answer:
    return Answer(
        outputs={"label": label},
        request_id=request_id,
        deployment="cloud/m:1",
        tier="cloud",
        node="cloud",
        model="m",
        cost=0.002,
        created_at=1.0,
        signature=("#2",),
    )


def unit(*values: float) -> Vector:
    vector = np.asarray(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


async def test_an_answer_comes_back_whole(store: AnswerStore) -> None:
    await store.put("t/_/chat/k1", answer(), ttl_s=60)
    assert await store.get("t/_/chat/k1") == answer()
    assert await store.get("t/_/chat/other") is None


async def test_an_answer_expires_after_its_ttl(store: AnswerStore) -> None:
    await store.put("t/_/chat/k1", answer(), ttl_s=0.05)
    assert await store.get("t/_/chat/k1") is not None
    await asyncio.sleep(0.1)
    assert await store.get("t/_/chat/k1") is None


async def test_nearest_ranks_by_cosine_above_the_floor(store: AnswerStore) -> None:
    await store.put("t/_/qa/a", answer("a"), 60, "t/_/qa/i1", unit(1, 0, 0))
    await store.put("t/_/qa/b", answer("b"), 60, "t/_/qa/i1", unit(1, 1, 0))
    await store.put("t/_/qa/c", answer("c"), 60, "t/_/qa/i1", unit(0, 0, 1))
    await store.put("t/_/qa/d", answer("d"), 60, "t/_/qa/i2", unit(1, 0, 0))  # another index
    found = await store.nearest("t/_/qa/i1", unit(1, 0.1, 0), floor=0.5)
    assert [n.key for n in found] == ["t/_/qa/a", "t/_/qa/b"]
    assert found[0].similarity == pytest.approx(0.995, abs=1e-3)
    assert await store.nearest("t/_/qa/none", unit(1, 0, 0), floor=0.0) == []


async def test_flush_removes_one_prefix_and_its_index(store: AnswerStore) -> None:
    await store.put("alice/_/qa/a", answer(), 60, "alice/_/qa/i", unit(1, 0))
    await store.put("alice/s1/qa/b", answer(), 60)
    await store.put("bob/_/qa/a", answer(), 60, "bob/_/qa/i", unit(1, 0))
    assert await store.flush("alice/") >= 2
    assert await store.get("alice/_/qa/a") is None
    assert await store.get("alice/s1/qa/b") is None
    assert await store.nearest("alice/_/qa/i", unit(1, 0), floor=0.0) == []
    assert await store.get("bob/_/qa/a") is not None
    assert len(await store.nearest("bob/_/qa/i", unit(1, 0), floor=0.0)) == 1


def test_memory_keeps_within_its_bytes_least_recently_used_out_first() -> None:
    async def scenario() -> None:
        size = len(answer().encode()) + 256
        store = MemoryAnswers(max_bytes=3 * size)
        for key in ("a", "b", "c"):
            await store.put(key, answer(), 60)
        assert await store.get("a") is not None  # a is now the most recent
        await store.put("d", answer(), 60)
        assert await store.get("b") is None
        assert [await store.get(k) is not None for k in ("a", "c", "d")] == [True] * 3
        assert store.used_bytes <= 3 * size

    asyncio.run(scenario())


async def test_redis_replicas_see_each_others_vectors(redis_url: str) -> None:
    prefix = unique("hi-test:") + ":"
    first, second = RedisAnswers(redis_url, prefix), RedisAnswers(redis_url, prefix)
    try:
        await first.put("t/_/qa/a", answer("a"), 60, "t/_/qa/i", unit(1, 0))
        assert [n.key for n in await second.nearest("t/_/qa/i", unit(1, 0), 0.9)] == ["t/_/qa/a"]
        await first.put("t/_/qa/b", answer("b"), 60, "t/_/qa/i", unit(0, 1))
        found = await second.nearest("t/_/qa/i", unit(0, 1), 0.9)  # the mirror caught up
        assert [n.key for n in found] == ["t/_/qa/b"]
        await first.flush("t/")
        await first.put("t/_/qa/c", answer("c"), 60, "t/_/qa/i", unit(1, 1))
        found = await second.nearest("t/_/qa/i", unit(1, 0), 0.0)  # rebuilt, not appended
        assert [n.key for n in found] == ["t/_/qa/c"]
    finally:
        await first.flush("")
        await first.aclose()
        await second.aclose()
