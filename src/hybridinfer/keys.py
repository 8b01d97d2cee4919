"""API keys: generated, stored as scrypt hashes, verified with a short-lived memory cache.

A key is looked up by a sha256 prefix (``id``) and verified against its scrypt hash (salted,
a standard KDF). Verifying costs tens of milliseconds, so a verified key is cached in memory
for ``cache_ttl_s``, indexed by the key's sha256 digest — the key itself is never kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass

from hybridinfer.errors import Unauthorized
from hybridinfer.store.sql import SqlStore, StoreConflict, StoreUnavailable

SCOPES = frozenset({"infer", "admin", "node"})
_SCRYPT = {"n": 2**14, "r": 8, "p": 1}


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling, and what they may do."""

    key_id: str
    scopes: frozenset[str]

    def allows(self, scope: str) -> bool:
        return scope in self.scopes or "admin" in self.scopes


def key_id_of(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def hash_key(key: str, salt: bytes | None = None) -> str:
    salt = salt or secrets.token_bytes(16)
    digest = hashlib.scrypt(key.encode(), salt=salt, dklen=32, **_SCRYPT)
    return f"scrypt${_SCRYPT['n']}${salt.hex()}${digest.hex()}"


def verify_key(key: str, hashed: str) -> bool:
    try:
        scheme, n, salt_hex, digest_hex = hashed.split("$")
    except ValueError:
        return False
    if scheme != "scrypt":
        return False
    digest = hashlib.scrypt(
        key.encode(), salt=bytes.fromhex(salt_hex), dklen=32, n=int(n), r=_SCRYPT["r"], p=1
    )
    return hmac.compare_digest(digest.hex(), digest_hex)


def generate_key() -> str:
    return f"hi_{secrets.token_urlsafe(32)}"


class KeyRing:
    """Creates and authenticates API keys and the node token."""

    def __init__(self, store: SqlStore, node_token: str | None, cache_ttl_s: float = 30.0) -> None:
        self._store = store
        self._node_token = node_token
        self._ttl = cache_ttl_s
        self._cache: dict[bytes, tuple[Principal, float]] = {}
        self._verifying: dict[bytes, asyncio.Future[Principal]] = {}

    async def create(self, name: str, scopes: set[str], key: str | None = None) -> str:
        """Store a new key (or the given one) and return it; it is shown only this once."""
        unknown = scopes - SCOPES
        if unknown:
            raise ValueError(f"unknown scopes: {', '.join(sorted(unknown))}")
        key = key or generate_key()
        await self._store.add_key(key_id_of(key), name, hash_key(key), sorted(scopes))
        return key

    async def ensure(self, name: str, scopes: set[str], key: str) -> None:
        """Create ``key`` unless it already exists (the bootstrap key on every start)."""
        if await self._store.get_key(key_id_of(key)) is None:
            with contextlib.suppress(StoreConflict):  # another replica created it just now
                await self.create(name, scopes, key)

    async def revoke(self, key_id: str) -> bool:
        revoked = await self._store.revoke_key(key_id)
        self._cache = {d: entry for d, entry in self._cache.items() if entry[0].key_id != key_id}
        return revoked

    async def authenticate(self, presented: str) -> Principal:
        """The principal behind a bearer token, or Unauthorized."""
        digest = hashlib.sha256(presented.encode()).digest()
        cached = self._cache.get(digest)
        now = time.monotonic()
        if cached is not None and cached[1] > now:
            return cached[0]
        try:
            principal = await self._lookup_once(digest, presented)
        except StoreUnavailable:
            if cached is None:
                raise
            return cached[0]  # the store is away: a key verified before keeps working
        if len(self._cache) > 10_000:
            self._cache.clear()
        self._cache[digest] = (principal, now + self._ttl)
        return principal

    async def _lookup_once(self, digest: bytes, presented: str) -> Principal:
        """One look-up per key at a time: callers that miss the cache together share it.

        A scrypt check takes tens of milliseconds; when a busy key's cache entry expires, every
        request arriving meanwhile would otherwise start its own check and stall the gateway.
        """
        verifying = self._verifying.get(digest)
        if verifying is None:
            verifying = asyncio.ensure_future(self._lookup(presented))
            self._verifying[digest] = verifying
            verifying.add_done_callback(lambda _: self._verifying.pop(digest, None))
        return await asyncio.shield(verifying)

    async def _lookup(self, presented: str) -> Principal:
        if self._node_token and hmac.compare_digest(presented, self._node_token):
            return Principal("node-token", frozenset({"node"}))
        record = await self._store.get_key(key_id_of(presented))
        if record is None or record["revoked_at"] is not None:
            raise Unauthorized("unknown or revoked API key")
        # scrypt off the event loop: it holds a core for tens of milliseconds.
        if not await asyncio.to_thread(verify_key, presented, record["hash"]):
            raise Unauthorized("unknown or revoked API key")
        return Principal(record["id"], frozenset(record["scopes"].split()))
