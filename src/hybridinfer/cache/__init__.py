"""Caches: rate-limit and spend counters, hot values shared by replicas (memory, Redis)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hybridinfer.cache.base import Cache
    from hybridinfer.settings import Settings


def open_cache(settings: Settings) -> Cache:
    """The cache the settings name (``cache``: memory or redis)."""
    if settings.cache == "redis":
        from hybridinfer.cache.redis import RedisCache

        return RedisCache(settings.resolved_redis_url, settings.cache_prefix)
    from hybridinfer.cache.memory import MemoryCache

    return MemoryCache()
