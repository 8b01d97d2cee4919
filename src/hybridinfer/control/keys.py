"""API keys: generated, stored as scrypt hashes, verified with a short-lived memory cache.

A key is looked up by a sha256 prefix (``id``) and verified against its scrypt hash: a salted,
memory-hard standard KDF (RFC 7914) with N = 2**14, r = 8, p = 1, a 16-byte random salt and a
32-byte digest — about 16 MiB and tens of milliseconds per check, so guessing from a stolen
table is slow. A verified key is cached in memory for ``cache_ttl_s``, indexed by the key's
sha256 digest — the key itself is never kept.

Scopes: ``infer`` (inference, own traces and tasks), ``admin`` (everything a client may do,
and the admin API) and ``node`` (registration, heartbeats, artifacts). Node credentials are
separate from client keys: ``admin`` does not imply ``node``, and a ``node`` key carries no
other scope, so a client key cannot register a node and a node token cannot infer.

Each key may carry its own rate limit and spend budget. Rotation issues a new key with the
same scopes and limits and lets the old one work for a grace period, then refuses it.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hybridinfer.errors import InvalidInput, NotFound, StoreConflict, StoreUnavailable, Unauthorized
from hybridinfer.store.sql import SqlStore

SCOPES = frozenset({"infer", "admin", "node"})
NODE_SCOPE = "node"
_SCRYPT = {"n": 2**14, "r": 8, "p": 1}
NODE_TOKEN_ID = "node-token"


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling, what they may do, and the limits their key carries."""

    key_id: str
    scopes: frozenset[str]
    rate_limit_per_minute: int | None = None
    budget: float | None = None
    expires_at: float | None = None

    def allows(self, scope: str) -> bool:
        if scope == NODE_SCOPE:  # node credentials are never implied by admin
            return NODE_SCOPE in self.scopes
        return scope in self.scopes or "admin" in self.scopes

    def expired(self, now: float) -> bool:
        return self.expires_at is not None and self.expires_at <= now


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


def check_scopes(scopes: set[str]) -> None:
    """Known scopes only, at least one, and ``node`` never mixed with client scopes."""
    unknown = scopes - SCOPES
    if unknown:
        raise InvalidInput(f"unknown scopes: {', '.join(sorted(unknown))}")
    if not scopes:
        raise InvalidInput("a key needs at least one scope")
    if NODE_SCOPE in scopes and len(scopes) > 1:
        raise InvalidInput("a node key carries only the 'node' scope (node and client keys differ)")


def describe(record: dict[str, Any]) -> dict[str, Any]:
    """A key record as the admin API shows it: everything but the hash."""
    return {name: value for name, value in record.items() if name != "hash"} | {
        "scopes": sorted(record["scopes"].split())
    }


class KeyRing:
    """Creates, rotates, revokes and authenticates API keys and the node token."""

    def __init__(
        self,
        store: SqlStore,
        node_token: str | None,
        cache_ttl_s: float = 30.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._clock = clock
        self._node_token = node_token
        self._ttl = cache_ttl_s
        self._cache: dict[bytes, tuple[Principal, float]] = {}
        self._budgets: dict[str, float | None] = {}
        self._verifying: dict[bytes, asyncio.Future[Principal]] = {}

    async def create(
        self,
        name: str,
        scopes: set[str],
        key: str | None = None,
        rate_limit_per_minute: int | None = None,
        budget: float | None = None,
    ) -> str:
        """Store a new key (or the given one) and return it; it is shown only this once."""
        check_scopes(scopes)
        key = key or generate_key()
        await self._store.add_key(
            key_id_of(key), name, hash_key(key), sorted(scopes), rate_limit_per_minute, budget
        )
        return key

    async def ensure(self, name: str, scopes: set[str], key: str) -> None:
        """Create ``key`` unless it already exists (the bootstrap key on every start)."""
        if await self._store.get_key(key_id_of(key)) is None:
            with contextlib.suppress(StoreConflict):  # another replica created it just now
                await self.create(name, scopes, key)

    async def get(self, key_id: str) -> dict[str, Any]:
        """One key's record (no hash); NotFound if there is none."""
        record = await self._store.get_key(key_id)
        if record is None:
            raise NotFound(f"no API key {key_id!r}", code="unknown_key")
        return describe(record)

    async def list(self) -> list[dict[str, Any]]:
        return [describe(record) for record in await self._store.list_keys()]

    async def revoke(self, key_id: str) -> bool:
        revoked = await self._store.revoke_key(key_id)
        self._forget(key_id)
        return revoked

    async def rotate(self, key_id: str, grace_s: float) -> str:
        """A new key with the old one's name, scopes and limits; the old one is refused
        ``grace_s`` seconds from now (callers switch over meanwhile, no downtime)."""
        old = await self._store.get_key(key_id)
        if old is None or old["revoked_at"] is not None:
            raise NotFound(f"no active API key {key_id!r}", code="unknown_key")
        now = self._clock()
        if old["expires_at"] is not None and old["expires_at"] <= now:
            raise NotFound(f"API key {key_id!r} has expired", code="unknown_key")
        new = await self.create(
            old["name"],
            set(old["scopes"].split()),
            None,
            old["rate_limit_per_minute"],
            old["budget"],
        )
        expires_at = now + grace_s
        if old["expires_at"] is not None:
            expires_at = min(expires_at, old["expires_at"])
        await self._store.expire_key(key_id, expires_at, key_id_of(new))
        self._forget(key_id)
        return new

    def budget_of(self, key_id: str | None) -> float | None:
        """The spend budget of a key seen authenticating (None: the policy's per-key limit)."""
        return None if key_id is None else self._budgets.get(key_id)

    def _forget(self, key_id: str) -> None:
        self._cache = {d: entry for d, entry in self._cache.items() if entry[0].key_id != key_id}

    async def authenticate(self, presented: str) -> Principal:
        """The principal behind a bearer token, or Unauthorized."""
        digest = hashlib.sha256(presented.encode()).digest()
        cached = self._cache.get(digest)
        now = time.monotonic()
        if cached is not None and cached[1] > now:
            principal = cached[0]
        elif cached is not None and cached[1] + self._ttl > now:
            principal = cached[0]  # recently verified: answer now, check again behind it
            self._refresh_behind(digest, presented)
        else:
            try:
                principal = await self._lookup_once(digest, presented)
            except StoreUnavailable:
                if cached is None:
                    raise
                principal = cached[0]  # the store is away: a key verified before keeps working
            if len(self._cache) > 10_000:
                self._cache.clear()
            self._cache[digest] = (principal, now + self._ttl)
        if principal.expired(self._clock()):
            raise Unauthorized("unknown or revoked API key")
        return principal

    def _refresh_behind(self, digest: bytes, presented: str) -> None:
        """Re-check a key whose cache entry just expired without making its caller wait.

        Otherwise every expiry of a busy key would hold all its requests for one scrypt
        check. A key revoked on another replica is thus refused within one TTL plus one check
        (revoking through this ring forgets it at once).
        """
        if digest in self._verifying:
            return
        refresh = asyncio.ensure_future(self._lookup(presented))
        self._verifying[digest] = refresh

        def settle(done: asyncio.Future[Principal]) -> None:
            self._verifying.pop(digest, None)
            if done.cancelled():
                return
            error = done.exception()
            if error is None:
                self._cache[digest] = (done.result(), time.monotonic() + self._ttl)
            elif isinstance(error, Unauthorized):
                self._cache.pop(digest, None)

        refresh.add_done_callback(settle)

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
            return Principal(NODE_TOKEN_ID, frozenset({NODE_SCOPE}))
        record = await self._store.get_key(key_id_of(presented))
        if record is None or record["revoked_at"] is not None:
            raise Unauthorized("unknown or revoked API key")
        # scrypt off the event loop: it holds a core for tens of milliseconds.
        if not await asyncio.to_thread(verify_key, presented, record["hash"]):
            raise Unauthorized("unknown or revoked API key")
        self._budgets[record["id"]] = record["budget"]
        return Principal(
            record["id"],
            frozenset(record["scopes"].split()),
            record["rate_limit_per_minute"],
            record["budget"],
            record["expires_at"],
        )
