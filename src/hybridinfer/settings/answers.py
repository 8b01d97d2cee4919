"""Where reused answers are kept (``answers/``): the shared store and the private-zone store.

A mixin of :class:`~hybridinfer.settings.gateway.Settings`, apart only to keep each module
small; the fields keep their flat ``HYBRIDINFER_*`` names. Which answers are reused, how and
for how long is the policy's ``answers`` block (``policy/answers.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings


class AnswerSettings(BaseSettings):
    """The answer cache's stores."""

    answer_cache: Literal["auto", "off", "memory", "redis"] = Field(
        "auto",
        description="Store of non-sensitive answers: memory (this process), redis (shared by "
        "replicas, at redis_url), off (no reuse at all), auto (redis when cache is redis).",
    )
    answer_cache_max_bytes: int = Field(
        64 * 1024 * 1024,
        ge=0,
        description="Bytes each in-memory answer store may hold (least recently used out first).",
    )
    answer_private_redis_url: SecretStr | None = Field(
        None,
        description="A Redis inside the private zone for sensitive-derived answers and their "
        "embeddings, shared by replicas; unset: they stay in each gateway's memory.",
    )
    answer_private_redis_url_file: Path | None = Field(
        None, description="File holding answer_private_redis_url."
    )
