"""Pulls new model versions: asks the control plane, downloads by signed URL, verifies, switches.

Every ``interval_s`` the node asks ``GET {control_plane}/v1/artifacts/{name}`` (node token) for
each model it serves; the answer lists complete versions with short-lived signed URLs (S3
presigned GETs, or HMAC-signed gateway URLs for the filesystem store), so the node never holds
store credentials. A version it does not have is downloaded into ``cache_dir``, checked
against the manifest's sha256 (a mismatch is refused, reported, and not retried until its
manifest changes), loaded, and made active (``ModelRepository.add_loaded``). Failures back off
from 1 s to 64 s.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import ssl
from pathlib import Path

import aiohttp
from pydantic import TypeAdapter, ValidationError

from hybridinfer.core import background
from hybridinfer.core.backoff import Backoff
from hybridinfer.models.artifact import ArtifactOffer
from hybridinfer.node.repository import ModelRepository

log = logging.getLogger("hybridinfer.node")
_OFFERS = TypeAdapter(list[ArtifactOffer])


class ModelPuller:
    """Keeps ``repository`` at the newest published versions of ``names``."""

    def __init__(
        self,
        control_plane: str,
        token: str,
        names: list[str],
        repository: ModelRepository,
        cache_dir: Path,
        interval_s: float = 30.0,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self._base = control_plane.rstrip("/")
        self._tls: ssl.SSLContext | bool = True if tls is None else tls
        self._headers = {"Authorization": f"Bearer {token}"}
        self._names = names
        self._repository = repository
        self._cache_dir = cache_dir
        self._interval = interval_s
        self._seen: dict[tuple[str, str], str] = {}  # (name, version) -> sha256 tried

    async def offers(self, session: aiohttp.ClientSession, name: str) -> list[ArtifactOffer]:
        url = f"{self._base}/v1/artifacts/{name}"
        async with session.get(url, headers=self._headers) as response:
            if response.status == 404:
                return []
            response.raise_for_status()
            body = await response.read()
        try:
            return _OFFERS.validate_json(body)
        except ValidationError as exc:
            raise ValueError(f"malformed artifact list for {name}: {exc}") from None

    async def _download(self, session: aiohttp.ClientSession, url: str, target: Path) -> None:
        async with session.get(url) as response:
            response.raise_for_status()
            with target.open("wb") as file:
                async for block in response.content.iter_chunked(1 << 20):
                    file.write(block)

    async def pull(self, session: aiohttp.ClientSession, name: str) -> list[str]:
        """Fetch, verify and switch in every version of ``name`` not seen yet (newest last)."""
        added: list[str] = []
        offers = await self.offers(session, name)
        for offer in offers[-self._repository.keep_versions :]:
            manifest = offer.manifest
            if self._seen.get((name, manifest.version)) == manifest.sha256:
                continue
            if manifest.version in self._repository.versions(name):
                self._seen[(name, manifest.version)] = manifest.sha256
                continue
            folder = self._cache_dir / name / manifest.version
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            await self._download(session, offer.model_url, folder / "model.onnx")
            await self._download(session, offer.card_url, folder / "card.json")
            self._seen[(name, manifest.version)] = manifest.sha256
            model = await self._repository.add_loaded(
                name, manifest.version, folder, manifest.sha256
            )
            if model is None:
                shutil.rmtree(folder, ignore_errors=True)  # refused: never loaded
            else:
                added.append(manifest.version)
                log.info("pulled %s version %s (sha256 verified)", name, manifest.version)
        return added

    async def pull_all(self, session: aiohttp.ClientSession) -> list[str]:
        """One round over every model; returns ``name:version`` of what was switched in."""
        added = []
        for name in self._names:
            added += [f"{name}:{version}" for version in await self.pull(session, name)]
        return added

    async def run(self) -> None:
        backoff = Backoff()
        timeout = aiohttp.ClientTimeout(total=120)
        connector = aiohttp.TCPConnector(ssl=self._tls)
        async with aiohttp.ClientSession(timeout=timeout, connector=connector) as session:
            while True:
                try:
                    await self.pull_all(session)
                except (aiohttp.ClientError, OSError, TimeoutError, ValueError) as exc:
                    log.warning(
                        "model pull failed (%s); retrying in %.0f s", exc, backoff.current_s
                    )
                    await backoff.wait()
                    continue
                backoff.reset()
                await asyncio.sleep(self._interval)

    def running(self) -> contextlib.AbstractAsyncContextManager[None]:
        """Run for the duration of a block (the node app's lifespan)."""
        return background.running(self.run(), "model-puller")
