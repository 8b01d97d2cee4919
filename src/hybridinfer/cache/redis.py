"""The Redis cache: counters and values shared by every gateway replica.

``add_within`` and ``take`` are Lua scripts, so the check and the add happen atomically on
the server (Redis runs a script to completion before any other command). Every redis-py
error is mapped into ``CacheUnavailable`` here; nothing from redis escapes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from hybridinfer.cache.base import EPSILON, Addition, Cache, Counter
from hybridinfer.errors import CacheUnavailable

# KEYS: the counters. ARGV[1]: amount, ARGV[2]: ttl in ms, ARGV[3]: epsilon,
# ARGV[3 + i]: the limit of KEYS[i] ("" for none). Returns {granted, value...} as strings
# (Lua numbers would come back truncated to integers).
ADD_WITHIN = """
local amount = tonumber(ARGV[1])
local values = {}
local granted = 1
for i, key in ipairs(KEYS) do
  local current = tonumber(redis.call('GET', key) or '0')
  values[i] = current
  local limit = ARGV[3 + i]
  if limit ~= '' and current + amount > tonumber(limit) + tonumber(ARGV[3]) then
    granted = 0
  end
end
local result = {tostring(granted)}
for i, key in ipairs(KEYS) do
  if granted == 1 then
    values[i] = tonumber(redis.call('INCRBYFLOAT', key, ARGV[1]))
    if redis.call('PTTL', key) < 0 then
      redis.call('PEXPIRE', key, ARGV[2])
    end
  end
  result[i + 1] = tostring(values[i])
end
return result
"""

# KEYS[1]: the counter. ARGV: want, limit, ttl in ms, give back, slack. Returns the units taken;
# the arithmetic is ``cache.base.units_to_take``.
TAKE = """
local want, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
local back, slack = tonumber(ARGV[4]), tonumber(ARGV[5])
local stored = redis.call('GET', KEYS[1])
local current = math.max(0, tonumber(stored or '0') - back)
local room = math.floor(limit - current)
local granted = 0
if room >= 1 and want >= 1 then
  granted = math.min(want, math.max(1, room - slack))
end
if stored or granted > 0 then
  redis.call('SET', KEYS[1], tostring(current + granted), 'KEEPTTL')
  if redis.call('PTTL', KEYS[1]) < 0 then
    redis.call('PEXPIRE', KEYS[1], ARGV[3])
  end
end
return granted
"""


@asynccontextmanager
async def redis_errors() -> AsyncIterator[None]:
    """Map redis-py's errors (and socket errors) into ``CacheUnavailable``."""
    try:
        yield
    except RedisError as exc:
        raise CacheUnavailable(f"redis: {type(exc).__name__}: {exc}") from exc
    except OSError as exc:
        raise CacheUnavailable(f"redis unreachable: {exc.strerror or exc}") from exc


class RedisCache(Cache):
    """One Redis server (or a managed Redis-compatible service), keys under ``prefix``."""

    def __init__(self, url: str, prefix: str = "hybridinfer:", timeout_s: float = 0.5) -> None:
        self._prefix = prefix
        self._client = aioredis.Redis.from_url(
            url,
            socket_timeout=timeout_s,
            socket_connect_timeout=timeout_s,
            retry_on_timeout=False,
        )
        self._add_within = self._client.register_script(ADD_WITHIN)
        self._take = self._client.register_script(TAKE)

    def _key(self, key: str) -> str:
        return self._prefix + key

    def _mapped(self) -> AbstractAsyncContextManager[None]:
        return redis_errors()

    async def get(self, key: str) -> bytes | None:
        async with self._mapped():
            value = await self._client.get(self._key(key))
        if value is None:
            return None
        return value.encode() if isinstance(value, str) else bytes(value)

    async def set(self, key: str, value: bytes, ttl_s: float | None = None) -> None:
        ttl_ms = None if ttl_s is None else max(1, int(ttl_s * 1000))
        async with self._mapped():
            await self._client.set(self._key(key), value, px=ttl_ms)

    async def delete(self, key: str) -> None:
        async with self._mapped():
            await self._client.delete(self._key(key))

    async def add_within(
        self, counters: Sequence[Counter], amount: float, ttl_s: float
    ) -> Addition:
        keys = [self._key(counter.key) for counter in counters]
        limits = ["" if c.limit is None else repr(float(c.limit)) for c in counters]
        arguments = [repr(float(amount)), str(max(1, int(ttl_s * 1000))), repr(EPSILON), *limits]
        async with self._mapped():
            reply = await self._add_within(keys=keys, args=arguments)
        granted, *values = (float(item) for item in reply)
        return Addition(granted == 1.0, tuple(values))

    async def take(
        self, key: str, want: int, limit: int, ttl_s: float, give_back: int = 0, slack: int = 0
    ) -> int:
        ttl_ms = max(1, int(ttl_s * 1000))
        arguments = [want, limit, ttl_ms, give_back, slack]
        async with self._mapped():
            granted = await self._take(keys=[self._key(key)], args=arguments)
        return int(granted)

    async def read(self, keys: Sequence[str]) -> tuple[float, ...]:
        if not keys:
            return ()
        async with self._mapped():
            values = await self._client.mget([self._key(key) for key in keys])
        return tuple(0.0 if value is None else float(value) for value in values)

    async def ping(self) -> bool:
        try:
            async with self._mapped():
                await self._client.ping()
        except CacheUnavailable:
            return False
        return True

    async def aclose(self) -> None:
        await self._client.aclose()
