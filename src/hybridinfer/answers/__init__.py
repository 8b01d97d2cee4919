"""Answers reused: the exact and semantic response cache of subtask answers (memory, Redis).

Not to be confused with ``cache/``, the counter store of rate limits and spend ledgers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from hybridinfer.settings.secrets import secret_from_file

if TYPE_CHECKING:
    from hybridinfer.answers.base import AnswerStore
    from hybridinfer.answers.stage import AnswerStage, Embed
    from hybridinfer.policy.answers import AnswersPolicy
    from hybridinfer.settings import Settings


def _store(kind: str, settings: Settings, url: str | None, prefix: str) -> AnswerStore:
    if kind == "redis":
        from hybridinfer.answers.redis import RedisAnswers

        return RedisAnswers(url or settings.resolved_redis_url, prefix)
    from hybridinfer.answers.memory import MemoryAnswers

    return MemoryAnswers(settings.answer_cache_max_bytes)


def open_answers(
    settings: Settings, policy: Callable[[], AnswersPolicy], embed: Embed | None
) -> AnswerStage | None:
    """The cache stage the settings describe (None when ``answer_cache: off``).

    The private-zone store is this process's memory unless ``answer_private_redis_url`` names
    a Redis inside the private zone; the shared store never receives a sensitive-derived entry.
    """
    from hybridinfer.answers.stage import AnswerStage

    kind = settings.answer_cache
    if kind == "off":
        return None
    if kind == "auto":
        kind = "redis" if settings.cache == "redis" else "memory"
    shared = _store(kind, settings, None, settings.cache_prefix + "answers:")
    secret = settings.answer_private_redis_url
    private_url = secret_from_file(settings.answer_private_redis_url_file) or (
        secret.get_secret_value() if secret is not None else None
    )
    private_kind = "redis" if private_url else "memory"
    private = _store(
        private_kind, settings, private_url, settings.cache_prefix + "private-answers:"
    )
    return AnswerStage(shared, private, policy, embed)
