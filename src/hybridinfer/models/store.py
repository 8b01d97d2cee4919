"""Model versions in the object store: publish, list, offer to nodes, keep the last N.

Layout: ``models/{name}/{version}/{model.onnx,card.json,manifest.json}``. The manifest is
written last, so a version without one is an upload in progress and is never offered.
"""

from __future__ import annotations

import hashlib
import logging
import time
from typing import Any

import orjson
from pydantic import ValidationError

from hybridinfer.errors import InvalidInput, NotFound, UpstreamError
from hybridinfer.models.artifact import ArtifactOffer, Manifest, version_order
from hybridinfer.objectstore.base import ObjectStore

log = logging.getLogger("hybridinfer.models")


def _prefix(name: str, version: str | None = None) -> str:
    return f"models/{name}/" if version is None else f"models/{name}/{version}/"


class ModelStore:
    """Versioned model artifacts over any ``ObjectStore``."""

    def __init__(self, objects: ObjectStore, keep_versions: int = 3) -> None:
        self.objects = objects
        self.keep_versions = keep_versions

    async def publish(
        self, name: str, version: str, model: bytes, card: dict[str, Any]
    ) -> Manifest:
        """Upload a version (artifact, card, then manifest) and drop versions beyond the last
        ``keep_versions``."""
        card = {**card, "name": name, "version": version}
        card_bytes = orjson.dumps(card, option=orjson.OPT_INDENT_2)
        try:
            manifest = Manifest(
                name=name,
                version=version,
                sha256=hashlib.sha256(model).hexdigest(),
                size=len(model),
                card_sha256=hashlib.sha256(card_bytes).hexdigest(),
                published_at=time.time(),
            )
        except ValidationError as exc:
            raise InvalidInput(
                f"cannot publish {name}:{version}: {exc.errors()[0]['msg']}"
            ) from None
        prefix = _prefix(name, version)
        await self.objects.put(prefix + "model.onnx", model)
        await self.objects.put(prefix + "card.json", card_bytes)
        await self.objects.put(prefix + "manifest.json", manifest.model_dump_json().encode())
        await self.prune(name)
        log.info("published %s version %s (sha256 %s)", name, version, manifest.sha256[:12])
        return manifest

    async def manifest(self, name: str, version: str) -> Manifest:
        raw = await self.objects.get(_prefix(name, version) + "manifest.json")
        try:
            return Manifest.model_validate_json(raw)
        except ValidationError:
            raise UpstreamError(f"manifest of {name}:{version} is malformed") from None

    async def versions(self, name: str) -> list[str]:
        """Complete versions of ``name`` (those with a manifest), oldest first."""
        keys = await self.objects.list(_prefix(name))
        found = {
            key.split("/")[2]
            for key in keys
            if key.endswith("/manifest.json") and key.count("/") == 3
        }
        return sorted(found, key=version_order)

    async def offer(self, name: str, expires_s: int) -> list[ArtifactOffer]:
        """Every complete version with short-lived signed URLs, oldest first."""
        offers = []
        for version in await self.versions(name):
            prefix = _prefix(name, version)
            try:
                card = orjson.loads(await self.objects.get(prefix + "card.json"))
            except (NotFound, orjson.JSONDecodeError):
                continue
            offers.append(
                ArtifactOffer(
                    manifest=await self.manifest(name, version),
                    model_url=await self.objects.signed_url(prefix + "model.onnx", expires_s),
                    card_url=await self.objects.signed_url(prefix + "card.json", expires_s),
                    card=card,
                )
            )
        return offers

    async def prune(self, name: str) -> list[str]:
        """Delete versions older than the last ``keep_versions``; returns what went."""
        versions = await self.versions(name)
        dropped = versions[: max(0, len(versions) - self.keep_versions)]
        for version in dropped:
            prefix = _prefix(name, version)
            # The manifest goes first: a half-deleted version is no longer offered.
            await self.objects.delete(prefix + "manifest.json")
            for key in await self.objects.list(prefix):
                await self.objects.delete(key)
        return dropped
