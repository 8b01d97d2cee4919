"""Every answer store, for the one shared suite (house rule 7): memory and Redis."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from hybridinfer.answers.base import AnswerStore
from tests.services import redis_url, unique

__all__ = ["redis_url"]


@pytest.fixture(params=["memory", "redis"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[AnswerStore]:
    """An empty answer store of each kind (Redis: keys under a fresh prefix, flushed after)."""
    if request.param == "memory":
        from hybridinfer.answers.memory import MemoryAnswers

        yield MemoryAnswers(max_bytes=1 << 20)
        return
    from hybridinfer.answers.redis import RedisAnswers

    found = RedisAnswers(request.getfixturevalue("redis_url"), prefix=unique("hi-test:") + ":")
    yield found
    await found.flush("")
    await found.aclose()
