"""Every cache implementation, for the one shared suite (house rule 7): memory and Redis."""

from tests.services import cache, redis_url

__all__ = ["cache", "redis_url"]
