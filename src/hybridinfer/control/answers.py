"""The answer cache's admin use cases: flush a tenant's or a scope's answers (audited), and
the hit counts behind ``GET /v1/answers``."""

from __future__ import annotations

from typing import Any

from hybridinfer.answers.stage import AnswerStage
from hybridinfer.control.audit import AuditLog


class AnswerService:
    """Flushes and reports the cache stage (a gateway without one reports it off)."""

    def __init__(self, stage: AnswerStage | None, audit: AuditLog) -> None:
        self._stage = stage
        self._audit = audit

    async def flush(self, tenant: str, scope: str | None, actor: str) -> dict[str, Any]:
        """Remove every answer of ``tenant`` (an API key id), or of one of its scopes."""
        removed = 0 if self._stage is None else await self._stage.flush(tenant, scope)
        target = tenant if scope is None else f"{tenant}/{scope}"
        after = {"removed": removed}
        await self._audit.record(actor, "answers.flush", target, None, after)
        return {"tenant": tenant, "scope": scope, "removed": removed}

    async def flush_revoked(self, key_id: str) -> None:
        """A revoked key's answers go with it (its tenant's scope)."""
        if self._stage is not None:
            await self._stage.flush(key_id)

    def summary(self) -> dict[str, Any]:
        """Per capability: lookups, hits, misses, hit ratio, saved spend."""
        if self._stage is None:
            return {"enabled": False, "capabilities": {}}
        return {"enabled": True, "capabilities": self._stage.stats.summary()}
