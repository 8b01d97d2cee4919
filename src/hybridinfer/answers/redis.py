"""Answers shared by every gateway replica through Redis.

Exact entries are Redis strings with a TTL. The semantic index: the server here has no vector
search module (``MODULE LIST`` is empty on Redis 7.0), so each index is a Redis list of
``key + NUL + float32 vector`` items that every replica mirrors in process. A lookup costs one
pipelined round trip (length and first item, to see what changed) plus one more only when other
replicas added vectors since; the similarity search itself runs on the local matrix. A list that
was flushed or trimmed has a different first item, and the mirror is rebuilt from scratch.

Every redis-py error is mapped into ``CacheUnavailable`` (``cache/redis.py:redis_errors``);
nothing from redis escapes.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager

import numpy as np
import numpy.typing as npt
import redis.asyncio as aioredis

from hybridinfer.answers.base import Answer, AnswerStore, Neighbour, Vector, best_of
from hybridinfer.cache.redis import redis_errors

MAX_INDEX_ITEMS = 20_000
"""Vectors one index keeps in Redis (the oldest are trimmed); ~30 MB of float32 MiniLM rows."""


class _Mirror:
    """This replica's copy of one index list."""

    def __init__(self) -> None:
        self.head: bytes | None = None
        self.keys: list[str] = []
        self.rows: list[Vector] = []
        self._matrix: npt.NDArray[np.float32] | None = None

    def extend(self, items: list[bytes]) -> None:
        for item in items:
            key, _, vector = item.partition(b"\0")
            self.keys.append(key.decode())
            self.rows.append(np.frombuffer(vector, dtype=np.float32))
        if items:
            self._matrix = None

    def matrix(self, width: int) -> npt.NDArray[np.float32]:
        if self._matrix is None:
            self._matrix = np.vstack(self.rows) if self.rows else np.zeros((0, width), np.float32)
        return self._matrix


class RedisAnswers(AnswerStore):
    """One Redis server, keys under ``prefix``."""

    def __init__(
        self, url: str, prefix: str = "hybridinfer:answers:", timeout_s: float = 0.5
    ) -> None:
        self._prefix = prefix
        self._client = aioredis.Redis.from_url(
            url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s, retry_on_timeout=False
        )
        self._mirrors: dict[str, _Mirror] = {}

    def _entry_key(self, key: str) -> str:
        return f"{self._prefix}a:{key}"

    def _index_key(self, index: str) -> str:
        return f"{self._prefix}v:{index}"

    def _mapped(self) -> AbstractAsyncContextManager[None]:
        return redis_errors()

    async def get(self, key: str) -> Answer | None:
        async with self._mapped():
            value = await self._client.get(self._entry_key(key))
        return None if value is None else Answer.decode(_bytes(value))

    async def put(
        self,
        key: str,
        answer: Answer,
        ttl_s: float,
        index: str | None = None,
        vector: Vector | None = None,
    ) -> None:
        ttl_ms = max(1, int(ttl_s * 1000))
        async with self._mapped(), self._client.pipeline(transaction=False) as pipe:
            pipe.set(self._entry_key(key), answer.encode(), px=ttl_ms)
            if index is not None and vector is not None:
                item = key.encode() + b"\0" + np.asarray(vector, dtype=np.float32).tobytes()
                pipe.rpush(self._index_key(index), item)
                pipe.ltrim(self._index_key(index), -MAX_INDEX_ITEMS, -1)
                pipe.pexpire(self._index_key(index), ttl_ms)  # the list outlives no entry
            await pipe.execute()

    async def nearest(
        self, index: str, vector: Vector, floor: float, limit: int = 3
    ) -> list[Neighbour]:
        name = self._index_key(index)
        async with self._mapped():
            async with self._client.pipeline(transaction=False) as pipe:
                pipe.llen(name)
                pipe.lindex(name, 0)
                length, head = await pipe.execute()
            mirror = self._mirrors.get(index)
            if mirror is None or head != mirror.head or length < len(mirror.keys):
                mirror = self._mirrors[index] = _Mirror()
                mirror.head = head
            if length > len(mirror.keys):
                items = await self._client.lrange(name, len(mirror.keys), length - 1)
                mirror.extend([_bytes(item) for item in items])
        if not length:
            self._mirrors.pop(index, None)
            return []
        return best_of(mirror.keys, mirror.matrix(len(vector)), vector, floor, limit)

    async def flush(self, prefix: str) -> int:
        removed = 0
        async with self._mapped():
            for pattern in (self._entry_key(prefix), self._index_key(prefix)):
                batch: list[bytes] = []
                async for found in self._client.scan_iter(match=pattern + "*", count=500):
                    batch.append(found)
                    if len(batch) >= 500:
                        removed += await self._client.unlink(*batch)
                        batch = []
                if batch:
                    removed += await self._client.unlink(*batch)
        for index in [name for name in self._mirrors if name.startswith(prefix)]:
            del self._mirrors[index]
        return removed

    async def aclose(self) -> None:
        await self._client.aclose()


def _bytes(value: bytes | str) -> bytes:
    return value.encode() if isinstance(value, str) else bytes(value)
