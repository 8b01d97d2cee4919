"""The key admin use cases behind ``/v1/keys``: create, list, rotate, revoke.

Each change is one call that does the change and audits it with the record before and after,
so no caller can change a key without the audit entry. Records carry key ids only; the key
itself is in the one reply that creates it (``KeyRing`` keeps the hashes and authenticates).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from hybridinfer.control.audit import AuditLog
from hybridinfer.control.keys import KeyRing, key_id_of


class KeyService:
    """Audited key administration over the key ring."""

    def __init__(
        self,
        keys: KeyRing,
        audit: AuditLog,
        rotation_grace_s: float,
        on_revoke: Callable[[str], Awaitable[None]] | None = None,
    ) -> None:
        """``rotation_grace_s``: how long a rotated key keeps working when a caller does not
        say (the ``key_rotation_grace_s`` setting); ``on_revoke``: run with a revoked key's id
        (its reused answers are flushed)."""
        self._on_revoke = on_revoke
        self._keys = keys
        self._audit = audit
        self._rotation_grace_s = rotation_grace_s

    async def list(self) -> list[dict[str, Any]]:
        """Every key's record (no hashes, no keys)."""
        return await self._keys.list()

    async def create(
        self,
        name: str,
        scopes: set[str],
        actor: str,
        rate_limit_per_minute: int | None = None,
        budget: float | None = None,
    ) -> dict[str, Any]:
        """A new key: ``{"key", **record}``, the only time the key is shown."""
        key = await self._keys.create(name, scopes, None, rate_limit_per_minute, budget)
        record = await self._keys.get(key_id_of(key))
        await self._audit.record(actor, "key.create", record["id"], None, record)
        return {"key": key, **record}

    async def rotate(self, key_id: str, actor: str, grace_s: float | None = None) -> dict[str, Any]:
        """The successor key ``{"key", **record}``; the old one works ``grace_s`` longer."""
        grace_s = self._rotation_grace_s if grace_s is None else grace_s
        before = await self._keys.get(key_id)
        key = await self._keys.rotate(key_id, grace_s)
        after = await self._keys.get(key_id)
        await self._audit.record(actor, "key.rotate", key_id, before, after)
        return {"key": key, **await self._keys.get(key_id_of(key))}

    async def revoke(self, key_id: str, actor: str) -> dict[str, Any]:
        """Refuse the key from now on; its record after revocation."""
        before = await self._keys.get(key_id)
        await self._keys.revoke(key_id)
        if self._on_revoke is not None:
            await self._on_revoke(key_id)
        after = await self._keys.get(key_id)
        await self._audit.record(actor, "key.revoke", key_id, before, after)
        return after
