"""The machine's PostgreSQL, Redis and NATS JetStream, for the shared suites and acceptance
tests. Without a service the test skips, except under env ``CI`` where it fails."""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import AsyncIterator, Iterator
from urllib.parse import urlsplit

import pytest

POSTGRES_URL = os.environ.get(
    "HYBRIDINFER_TEST_POSTGRES_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/postgres"
)
REDIS_URL = os.environ.get("HYBRIDINFER_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
NATS_URL = os.environ.get("HYBRIDINFER_TEST_NATS_URL", "nats://127.0.0.1:4222")


def reachable(url: str) -> bool:
    parts = urlsplit(url)
    try:
        with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 0), 1.0):
            return True
    except OSError:
        return False


def require_service(url: str, name: str) -> str:
    """``url`` if the service answers; else skip (fail under CI)."""
    if not reachable(url):
        message = f"{name} is not reachable at {urlsplit(url).netloc}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return url


def unique(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:12]}"


_HEX_WORDS = dict(zip("0123456789abcdef", (
    "apple", "river", "stone", "cloud", "table", "tiger", "grass", "lemon",
    "ocean", "chair", "piano", "bread", "comet", "paper", "glass", "house",
), strict=True))  # fmt: skip


def unique_words(prefix: str) -> str:
    """A unique text a privacy scan reads as plain words: a random id spelt one word per hex
    digit. ``unique``'s id is not safe in a text that must stay non-personal: about one in
    1,500 is twelve digits that the scan takes for a phone number or a national id."""
    return prefix + " ".join(_HEX_WORDS[digit] for digit in uuid.uuid4().hex[:8])


def with_database(url: str, database: str) -> str:
    parts = urlsplit(url)
    return parts._replace(path=f"/{database}").geturl()


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh PostgreSQL database for one test."""
    from tests.pgadmin import create_database, drop_database

    require_service(POSTGRES_URL, "PostgreSQL")
    name = unique("hi_test_")
    create_database(POSTGRES_URL, name)
    try:
        yield with_database(POSTGRES_URL, name)
    finally:
        drop_database(POSTGRES_URL, name)


@pytest.fixture
def redis_url() -> str:
    return require_service(REDIS_URL, "Redis")


@pytest.fixture
def nats_url() -> str:
    return require_service(NATS_URL, "NATS")


@pytest.fixture(params=["memory", "redis"])
async def cache(request: pytest.FixtureRequest) -> AsyncIterator[object]:
    """An empty cache of each kind (Redis: keys under a fresh prefix)."""
    if request.param == "memory":
        from hybridinfer.cache.memory import MemoryCache

        yield MemoryCache()
        return
    from hybridinfer.cache.redis import RedisCache

    store = RedisCache(request.getfixturevalue("redis_url"), prefix=unique("hi-test:"))
    yield store
    await store.aclose()


@pytest.fixture(params=["memory", "nats"])
async def queue(request: pytest.FixtureRequest) -> AsyncIterator[object]:
    """An empty work queue of each kind, ack wait 1 s (NATS: fresh streams, deleted after)."""
    if request.param == "memory":
        from hybridinfer.queue.memory import MemoryQueue

        yield MemoryQueue(ack_wait_s=1.0)
        return
    from hybridinfer.queue.jetstream import JetStreamQueue

    work = JetStreamQueue(request.getfixturevalue("nats_url"), unique("HI_TEST_"), ack_wait_s=1.0)
    await work.connect()
    yield work
    await work.delete_streams()
    await work.close()
